package schemas

import "fmt"

// GPUStateMinuteSQL is the statement that rolls the GPU samples of db stored
// with ts in [{from}, {to}) (DateTime64(3, 'UTC') parameters) up into
// gpu_state_minute (migration 0027), as ingest does for the samples it stores:
// for samples that reached gpu_samples without ingest (a backfill, a
// benchmark's generated fleet). The aggregates are migration 0027's own copy of
// the last hours, and those of the gpu_state template over gpu_samples.
func GPUStateMinuteSQL(db string) string {
	return fmt.Sprintf(`INSERT INTO %s.gpu_state_minute
SELECT toStartOfMinute(ts) AS minute, gpu_uuid, any(gpu_index), any(model), max(driver_version),
    max(fb_total_mib), max(fb_used_mib), sum(ifNull(coalesce(sm_active, gr_engine_active, gpu_util), 0)),
    count(coalesce(sm_active, gr_engine_active, gpu_util)), sum(ifNull(power_w, 0)), count(power_w),
    max(temp_c), max(xid), max(ts)
FROM %s.gpu_samples
WHERE ts >= {from:DateTime64(3, 'UTC')} AND ts < {to:DateTime64(3, 'UTC')}
GROUP BY minute, gpu_uuid`, db, db)
}
