package chargeback

import (
	"context"
	"fmt"
	"time"

	"github.com/gpupool/gpupool/store"
)

// rollupSelect sums a generation's chargeback_hourly rows (aliased h) over the
// GPUs of each (hour, generation, job, card, cluster), in chargeback_job_hourly's
// column order. Migration 0012 spells out the same list for its backfill
// (TestRollupSelectInMigration keeps the two equal).
const rollupSelect = `h.hour, h.generation, h.job, h.card, h.cluster,
    count(), sum(h.gpu_hours), sum(h.used_gpu_hours), sum(h.idle_gpu_hours), sum(h.unmeasured_gpu_hours),
    sum(h.unobserved_gpu_hours), sum(h.energy_kwh), sum(h.queue_wait_hours),
    sumIf(h.gpu_hours, h.sm_active_mean IS NOT NULL), sumIf(h.gpu_hours * assumeNotNull(h.sm_active_mean), h.sm_active_mean IS NOT NULL),
    sumIf(h.gpu_hours, h.gr_engine_active_mean IS NOT NULL), sumIf(h.gpu_hours * assumeNotNull(h.gr_engine_active_mean), h.gr_engine_active_mean IS NOT NULL),
    max(60 * h.unmeasured_gpu_hours / h.gpu_weight)`

// rollupInsert writes the job rollup of generation {gen:UUID} for the hours in
// [{from}, {to}): one statement, so that each key gets one row (readers of
// chargeback_job_priced do not re-aggregate).
const rollupInsert = `INSERT INTO chargeback_job_hourly
SELECT ` + rollupSelect + `
FROM chargeback_hourly AS h
WHERE h.generation = {gen:UUID} AND h.hour >= {from:DateTime64(3, 'UTC')} AND h.hour < {to:DateTime64(3, 'UTC')}
GROUP BY h.hour, h.generation, h.job, h.card, h.cluster`

// WriteRollup writes chargeback_job_hourly for the rows of generation gen in
// [from, to). Refresh does it after writing a generation's rows and before
// recording the generation, so readers see the rollup exactly when they see the
// rows; code that writes chargeback_hourly rows itself (tests, benchmarks) calls
// it the same way.
func WriteRollup(ctx context.Context, s Store, gen string, from, to time.Time) error {
	return writeRollup(ctx, s, store.Params{"gen": gen, "from": timeParam(from), "to": timeParam(to)})
}

func writeRollup(ctx context.Context, s Store, p store.Params) error {
	if err := s.Exec(ctx, rollupInsert, store.Params{"gen": p["gen"], "from": p["from"], "to": p["to"]}); err != nil {
		return fmt.Errorf("chargeback: job rollup of generation %s (%s to %s): %w", p["gen"], p["from"], p["to"], err)
	}
	return nil
}

// backfillSelect is the job rollup of every current generation (as
// chargeback_refreshes records) that has none yet; migration 0012 runs the same.
const backfillSelect = `SELECT ` + rollupSelect + `
FROM chargeback_hourly AS h
WHERE (h.hour, h.generation) GLOBAL IN (
          SELECT r.hour, argMax(r.generation, r.refreshed_at) FROM chargeback_refreshes AS r GROUP BY r.hour)
  AND (h.hour, h.generation) GLOBAL NOT IN (SELECT DISTINCT x.hour, x.generation FROM chargeback_job_hourly AS x)
GROUP BY h.hour, h.generation, h.job, h.card, h.cluster`

// BackfillRollup writes the job rollup of every current generation that lacks
// one: the rows written and recorded without WriteRollup (by an analyzer older
// than migration 0012, or by hand). Running it twice adds nothing.
func BackfillRollup(ctx context.Context, s Store) error {
	if err := s.Exec(ctx, "INSERT INTO chargeback_job_hourly\n"+backfillSelect, nil); err != nil {
		return fmt.Errorf("chargeback: backfill the job rollup: %w", err)
	}
	return nil
}
