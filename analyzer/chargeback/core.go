package chargeback

import (
	"strings"
	"text/template"

	"github.com/gpupool/gpupool/schemas"
)

// The chargeback is one SQL query, written once here and rendered over two sets
// of sources: the rollups (gpu_minute, process_minute and the jobs view), which is
// what Compute and Refresh run, and the raw tables (gpu_samples, process_samples,
// job_events), which is the documented query finance uses to check any total
// (docs/finance.md embeds it; a test keeps the two identical). Rendering both from
// one text is what makes "rollups and raw agree" a property of the code rather
// than of two queries someone keeps in step by hand.
//
// The query works in milliseconds since the epoch and produces one row per
// (hour, GPU, job attempt), plus one per (hour, GPU) with job = ” for the time no
// job held a GPU that reported samples. Definitions (docs/finance.md explains
// them to finance):
//
//   - Held time comes from the jobs: each attempt holds each GPU it lists from its
//     start to its end (or the period's end), clipped to the period.
//   - A GPU listed by several attempts at once is shared: the time is cut at every
//     attempt's start and end and at every hour, and in a piece held by n
//     attempts each pays its share of the memory its processes held in the
//     piece's minutes (memory-time from process_minute), or 1/n when none held
//     memory. With chargeback_settings' shared_split = 'activity' in effect at
//     the hour's start, each pays its share of the piece's active process
//     samples instead, when every holder has per-process figures and some were
//     active (else memory). Cutting at hours makes a period's figures the sum
//     of its hours', so Refresh (a day at a time) and Compute (any period)
//     agree. A GPU held by one attempt is not shared, whatever other processes
//     (zombies, strays) do on it.
//   - A holder of a shared piece is judged by its own processes: in a minute in
//     which they carry per-process SM figures (judged samples, migration 0013),
//     its share of the GPU's measured samples is active in the proportion of its
//     judged samples that were active; in a minute without, by the GPU's samples
//     (the analyzer's idle-tenant rule: neighbours cannot be told apart). The
//     unallocated row still takes the GPU's own active samples.
//   - Activity is measured per GPU-minute: a held piece covers a fraction of each
//     minute it overlaps, and counts that fraction of the minute's measured and
//     active samples. Measured time is the held time within minutes that have an
//     activity measurement; used time is measured time times the piece's share of
//     active samples among measured samples; idle is the rest of the measured
//     time; unmeasured is held time with no measurement. Unobserved is the part
//     of unmeasured time in minutes when the GPU sent no sample at all (no
//     telemetry): a job nothing reported on is all unobserved, never used.
//   - GPU-hours weigh a MIG instance by its compute slices out of the card's (7;
//     4 on an A30): schemas.GPUWeight, in SQL schemas.GPUWeightSQL.
//   - Energy: the counter's increase from the previous minute's last reading
//     (when that reading is in the same or the previous hour; otherwise within
//     the minute), shared out like activity.
//   - Queue wait is charged once per attempt: on its first GPU, in the piece
//     that starts at the attempt's start.
//   - The unallocated row of a GPU-hour is what its measured minutes (within the
//     period) leave after the jobs' measured time.
//
// The segs step passes froms and tos to its lambda as arguments instead of
// capturing them: ClickHouse copies a lambda's captured arrays for every element,
// which made that step quadratic per row (a month of 1,000 GPUs asked for 21 GiB).
var coreTemplate = template.Must(template.New("core").Funcs(template.FuncMap{"gpuWeight": schemas.GPUWeightSQL}).Parse(`WITH
    toUnixTimestamp64Milli({from:DateTime64(3, 'UTC')}) AS period_from_ms,
    toUnixTimestamp64Milli({to:DateTime64(3, 'UTC')}) AS period_to_ms,
    (
        SELECT arraySort(x -> x.1, groupArray((toInt64(toUnixTimestamp(b.effective_from)) * 1000, b.split)))
        FROM (
            SELECT st.effective_from AS effective_from, toString(argMax(st.shared_split, st.set_at)) AS split
            FROM chargeback_settings AS st
            GROUP BY st.effective_from
        ) AS b
    ) AS split_book,
    throwIf(NOT arrayAll(x -> x.2 IN ('memory', 'activity'), split_book),
            'chargeback_settings: shared_split must be memory or activity') AS split_check,
    alloc AS (
        SELECT job, gpu_uuid, gpu_index, job_card, job_cluster, start_ms, submit_ms,
               greatest(start_ms, period_from_ms) AS a_from,
               least(ifNull(end_ms, period_to_ms), period_to_ms) AS a_to
        FROM (
            SELECT jb.job AS job, toString(jb.card) AS job_card, toString(jb.cluster) AS job_cluster,
                   arrayDistinct(jb.gpu_uuids) AS uuids,
                   toUnixTimestamp64Milli(assumeNotNull(jb.start_time)) AS start_ms,
                   toUnixTimestamp64Milli(jb.end_time) AS end_ms,
                   toUnixTimestamp64Milli(ifNull(jb.submit_time, assumeNotNull(jb.start_time))) AS submit_ms
            FROM {{.Jobs}} AS jb
            WHERE jb.start_time IS NOT NULL AND jb.start_time < {to:DateTime64(3, 'UTC')}
              AND (jb.end_time IS NULL OR jb.end_time > {from:DateTime64(3, 'UTC')})
        )
        ARRAY JOIN uuids AS gpu_uuid, arrayEnumerate(uuids) AS gpu_index
        WHERE a_to > a_from
    ),
    segs AS (
        SELECT gpu_uuid, s_from, s_to, length(holders) AS n_holders, arrayJoin(holders) AS k,
               jobs_[k] AS job, idxs[k] AS gpu_index, cards[k] AS job_card, clusters[k] AS job_cluster,
               starts[k] AS start_ms, submits[k] AS submit_ms
        FROM (
            SELECT gpu_uuid, jobs_, idxs, cards, clusters, starts, submits, s_from, s_to,
                   arrayFilter((i, f, t) -> f <= s_from AND t >= s_to, arrayEnumerate(froms), froms, tos) AS holders
            FROM (
                SELECT gpu_uuid, groupArray(job) AS jobs_, groupArray(gpu_index) AS idxs,
                       groupArray(job_card) AS cards, groupArray(job_cluster) AS clusters,
                       groupArray(start_ms) AS starts, groupArray(submit_ms) AS submits,
                       groupArray(a_from) AS froms, groupArray(a_to) AS tos,
                       arraySort(arrayDistinct(arrayConcat(froms, tos))) AS bounds
                FROM alloc
                GROUP BY gpu_uuid
            )
            ARRAY JOIN arrayPopBack(bounds) AS s_from, arrayPopFront(bounds) AS s_to
        )
    ),
    hpieces AS (
        SELECT gpu_uuid, toDateTime(intDiv(h, 1000), 'UTC') AS hour, job, gpu_index, job_card, job_cluster,
               start_ms, submit_ms, n_holders,
               greatest(s_from, h) AS p_from, least(s_to, h + 3600000) AS p_to,
               if(n_holders > 1, arrayLast(x -> x.1 <= toInt64(h), split_book).2, '') AS split
        FROM segs
        ARRAY JOIN range(intDiv(toUInt64(s_from), 3600000) * 3600000, toUInt64(s_to), 3600000) AS h
    ),
    proc_minutes AS ({{.ProcMinutes}}),
    mem AS (
        SELECT hp.gpu_uuid AS gpu_uuid, hp.p_from AS p_from, hp.job AS job, sum(pm.mem) AS mem,
               sum(pm.judged) AS judged, sum(pm.act) AS act
        FROM (SELECT gpu_uuid, p_from, p_to, job FROM hpieces WHERE n_holders > 1) AS hp
        INNER JOIN proc_minutes AS pm ON pm.gpu_uuid = hp.gpu_uuid AND pm.job = hp.job
        WHERE pm.minute_ms + 60000 > hp.p_from AND pm.minute_ms < hp.p_to
        GROUP BY gpu_uuid, p_from, job
    ),
    pieces AS (
        SELECT hp.gpu_uuid AS gpu_uuid, hp.hour AS hour, hp.job AS job, hp.gpu_index AS gpu_index,
               hp.job_card AS job_card, hp.job_cluster AS job_cluster, hp.start_ms AS start_ms,
               hp.submit_ms AS submit_ms, hp.p_from AS p_from, hp.p_to AS p_to, hp.n_holders AS n_holders,
               toFloat64(mm.mem) AS job_mem,
               sum(job_mem) OVER (PARTITION BY hp.gpu_uuid, hp.p_from) AS piece_mem,
               toFloat64(mm.act) AS job_act,
               sum(job_act) OVER (PARTITION BY hp.gpu_uuid, hp.p_from) AS piece_act,
               min(toUInt8(ifNull(mm.judged, 0) > 0)) OVER (PARTITION BY hp.gpu_uuid, hp.p_from) AS all_judged,
               if(hp.n_holders = 1, 1.,
                  if(hp.split = 'activity' AND all_judged = 1 AND piece_act > 0, job_act / piece_act,
                     if(piece_mem > 0, job_mem / piece_mem, 1. / hp.n_holders))) AS share,
               row_number() OVER (PARTITION BY hp.gpu_uuid, hp.hour ORDER BY hp.p_from, hp.job) AS rk
        FROM hpieces AS hp
        LEFT JOIN mem AS mm ON mm.gpu_uuid = hp.gpu_uuid AND mm.p_from = hp.p_from AND mm.job = hp.job
        WHERE split_check = 0
    ),
    tenant_minutes AS (
        SELECT gpu_uuid, job, minute_ms, toFloat64(act) / judged AS t_active, toUInt8(1) AS t_has
        FROM proc_minutes
        WHERE judged > 0
    ),
    minutes AS (
        SELECT * FROM (
            SELECT mi.gpu_uuid AS gpu_uuid, mi.minute AS minute, toStartOfHour(mi.minute) AS hour,
                   toInt64(toUnixTimestamp(mi.minute)) * 1000 AS m_from,
                   mi.cluster AS cluster, mi.node AS node, mi.card AS card, mi.mig_profile AS mig_profile,
                   mi.activity_samples AS activity_samples, mi.active_samples AS active_samples,
                   mi.sm_sum AS sm_sum, mi.sm_n AS sm_n, mi.gr_sum AS gr_sum, mi.gr_n AS gr_n,
                   lagInFrame(mi.energy_max, 1, toUInt64(0)) OVER w AS prev_energy,
                   lagInFrame(mi.minute, 1, toDateTime(0, 'UTC')) OVER w AS prev_minute,
                   if(prev_minute >= hour - INTERVAL 1 HOUR AND mi.energy_max >= prev_energy,
                      mi.energy_max - prev_energy, mi.energy_max - mi.energy_min) AS energy_mj
            FROM ({{.Minutes}}) AS mi
            WINDOW w AS (PARTITION BY mi.gpu_uuid ORDER BY mi.minute ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)
        )
        WHERE m_from + 60000 > period_from_ms
    ),
    per_piece AS (
        SELECT gpu_uuid, hour, rk,
               any(job) AS job, any(gpu_index) AS gpu_index, any(job_card) AS job_card,
               any(job_cluster) AS job_cluster, any(start_ms) AS start_ms, any(submit_ms) AS submit_ms,
               any(share) AS share, any(p_from) AS p_from, any(p_to) AS p_to,
               anyIf(cluster, m_from > 0) AS m_cluster, anyIf(node, m_from > 0) AS m_node,
               anyIf(card, m_from > 0) AS m_card, anyIf(mig_profile, m_from > 0) AS m_mig_profile,
               sumIf(c_cap * 60000, activity_samples > 0 AND rk <= 1) AS cap_ms,
               sumIf(c_cap * activity_samples, rk <= 1) AS cap_k,
               sumIf(c_cap * active_samples, rk <= 1) AS cap_a,
               sumIf(c_cap * sm_sum, rk <= 1) AS cap_sm, sumIf(c_cap * sm_n, rk <= 1) AS cap_sm_n,
               sumIf(c_cap * gr_sum, rk <= 1) AS cap_gr, sumIf(c_cap * gr_n, rk <= 1) AS cap_gr_n,
               sumIf(c_cap * energy_mj, rk <= 1) AS cap_e,
               sumIf(c_p * 60000, activity_samples > 0) AS p_meas_ms, sum(c_p * 60000) AS p_obs_ms,
               sum(c_p * activity_samples) AS p_k, sum(c_p * active_samples) AS p_a,
               sum(c_p * if(n_holders > 1 AND own_active >= 0, activity_samples * own_active, toFloat64(active_samples))) AS p_ta,
               sum(c_p * sm_sum) AS p_sm, sum(c_p * sm_n) AS p_sm_n,
               sum(c_p * gr_sum) AS p_gr, sum(c_p * gr_n) AS p_gr_n,
               sum(c_p * energy_mj) AS p_e
        FROM (
            SELECT mp.*, if(ifNull(tm.t_has, 0) = 1, ifNull(tm.t_active, -1.), -1.) AS own_active
            FROM (
                SELECT gpu_uuid, hour, rk, job, gpu_index, job_card, job_cluster, start_ms, submit_ms, share, n_holders,
                       p_from, p_to, m_from, cluster, node, card, mig_profile,
                       activity_samples, active_samples, sm_sum, sm_n, gr_sum, gr_n, energy_mj,
                       if(m_from > 0, greatest(least(m_from + 60000, period_to_ms) - greatest(m_from, period_from_ms), 0) / 60000, 0) AS c_cap,
                       if(m_from > 0 AND rk > 0, greatest(least(m_from + 60000, p_to) - greatest(m_from, p_from), 0) / 60000 * share, 0) AS c_p
                FROM minutes
                FULL OUTER JOIN pieces USING (gpu_uuid, hour)
            ) AS mp
            LEFT JOIN tenant_minutes AS tm ON tm.gpu_uuid = mp.gpu_uuid AND tm.job = mp.job AND tm.minute_ms = mp.m_from
        )
        GROUP BY gpu_uuid, hour, rk
    ),
    facts AS (
        SELECT *,
               anyIf(m_card, m_card != '') OVER (PARTITION BY gpu_uuid) AS g_card,
               anyIf(m_mig_profile, m_card != '') OVER (PARTITION BY gpu_uuid) AS g_mig_profile,
               anyIf(m_cluster, m_cluster != '') OVER (PARTITION BY gpu_uuid) AS g_cluster,
               anyIf(m_node, m_node != '') OVER (PARTITION BY gpu_uuid) AS g_node,
               sum(p_meas_ms) OVER gh AS h_meas_ms, sum(p_k) OVER gh AS h_k, sum(p_a) OVER gh AS h_a,
               sum(p_sm) OVER gh AS h_sm, sum(p_sm_n) OVER gh AS h_sm_n,
               sum(p_gr) OVER gh AS h_gr, sum(p_gr_n) OVER gh AS h_gr_n, sum(p_e) OVER gh AS h_e
        FROM per_piece
        WINDOW gh AS (PARTITION BY gpu_uuid, hour)
    ),
    facts_rows AS (
        SELECT hour, gpu_uuid,
               if(kind = 1, job, '') AS job,
               if(g_cluster != '', g_cluster, job_cluster) AS cluster,
               g_node AS node,
               if(g_card != '', g_card, job_card) AS card,
               g_mig_profile AS mig_profile,
               {{gpuWeight "card" "g_mig_profile"}} AS gpu_weight,
               if(kind = 1, (p_to - p_from) * share, greatest(cap_ms - h_meas_ms, 0)) AS held_ms,
               if(kind = 1, p_meas_ms, held_ms) AS meas_ms,
               if(kind = 1, greatest(held_ms - p_obs_ms, 0), 0) AS unobs_ms,
               if(kind = 1, p_k, cap_k - h_k) AS k,
               if(kind = 1, p_ta, cap_a - h_a) AS a,
               if(kind = 1, p_sm, cap_sm - h_sm) AS sm, if(kind = 1, p_sm_n, cap_sm_n - h_sm_n) AS sm_n,
               if(kind = 1, p_gr, cap_gr - h_gr) AS gr, if(kind = 1, p_gr_n, cap_gr_n - h_gr_n) AS gr_n,
               if(kind = 1, p_e, cap_e - h_e) AS e,
               if(kind = 1 AND gpu_index = 1 AND p_from = start_ms, (start_ms - submit_ms) / 3600000, 0) AS queue_wait_hours
        FROM facts
        ARRAY JOIN arrayFilter(x -> (x = 1 AND rk >= 1) OR (x = 2 AND rk <= 1), [1, 2]) AS kind
    )
SELECT
    fr.hour AS hour, fr.gpu_uuid AS gpu_uuid, fr.job AS job,
    any(fr.cluster) AS cluster, any(fr.node) AS node, any(fr.card) AS card, any(fr.mig_profile) AS mig_profile,
    any(fr.gpu_weight) AS gpu_weight,
    sum(fr.gpu_weight * fr.held_ms) / 3600000 AS gpu_hours,
    sum(if(fr.k > 1e-9, fr.gpu_weight * fr.meas_ms * least(greatest(fr.a / fr.k, 0), 1), 0)) / 3600000 AS used_gpu_hours,
    sum(if(fr.k > 1e-9, fr.gpu_weight * fr.meas_ms * (1 - least(greatest(fr.a / fr.k, 0), 1)), 0)) / 3600000 AS idle_gpu_hours,
    gpu_hours - used_gpu_hours - idle_gpu_hours AS unmeasured_gpu_hours,
    greatest(least(sum(fr.gpu_weight * fr.unobs_ms) / 3600000, unmeasured_gpu_hours), 0) AS unobserved_gpu_hours,
    greatest(sum(fr.e), 0) / 3600000000 AS energy_kwh,
    if(sum(fr.sm_n) > 1e-9, sum(fr.sm) / sum(fr.sm_n), NULL) AS sm_active_mean,
    if(sum(fr.gr_n) > 1e-9, sum(fr.gr) / sum(fr.gr_n), NULL) AS gr_engine_active_mean,
    sum(fr.queue_wait_hours) AS queue_wait_hours
FROM facts_rows AS fr
WHERE fr.held_ms > 0.5 OR fr.e > 0.5
GROUP BY fr.hour, fr.gpu_uuid, fr.job`))

// sources are the table expressions the core query reads.
type sources struct {
	// Jobs has the columns of the jobs view the core reads.
	Jobs string
	// Minutes has one row per (gpu_uuid, minute) from toStartOfHour(from) - 1 hour
	// to {to}: cluster, node, card, mig_profile, activity_samples, active_samples,
	// sm_sum, sm_n, gr_sum, gr_n, energy_min, energy_max.
	Minutes string
	// ProcMinutes has (gpu_uuid, job, minute_ms, mem, judged, act) for the GPUs
	// of shared pieces (segs with n_holders > 1) in [toStartOfMinute(from), to),
	// mem being memory-time (MiB × samples), judged the process samples with a
	// per-process SM figure and act those of them active (migration 0013).
	ProcMinutes string
}

// rollupSources read the materialized rollups and the jobs view.
var rollupSources = sources{
	Jobs: "jobs",
	Minutes: `
                SELECT g.gpu_uuid AS gpu_uuid, g.minute AS minute,
                       toString(any(g.cluster)) AS cluster, toString(any(g.node)) AS node,
                       toString(any(g.card)) AS card, toString(any(g.mig_profile)) AS mig_profile,
                       toUInt64(sum(g.activity_samples)) AS activity_samples, toUInt64(sum(g.active_samples)) AS active_samples,
                       toFloat64(sum(g.sm_active_sum)) AS sm_sum, toUInt64(sum(g.sm_active_samples)) AS sm_n,
                       toFloat64(sum(g.gr_engine_active_sum)) AS gr_sum, toUInt64(sum(g.gr_engine_active_samples)) AS gr_n,
                       toUInt64(min(g.energy_mj_min)) AS energy_min, toUInt64(max(g.energy_mj_max)) AS energy_max
                FROM gpu_minute AS g
                WHERE g.minute >= toStartOfHour({from:DateTime64(3, 'UTC')}) - INTERVAL 1 HOUR
                  AND g.minute < {to:DateTime64(3, 'UTC')}
                GROUP BY g.gpu_uuid, g.minute`,
	ProcMinutes: `
            SELECT toString(p.gpu_uuid) AS gpu_uuid, toString(p.job) AS job,
                   toInt64(toUnixTimestamp(p.minute)) * 1000 AS minute_ms, toUInt64(sum(p.fb_used_mib_sum)) AS mem,
                   toUInt64(sum(p.judged_samples)) AS judged, toUInt64(sum(p.active_samples)) AS act
            FROM process_minute AS p
            WHERE p.minute >= toStartOfMinute({from:DateTime64(3, 'UTC')}) AND p.minute < {to:DateTime64(3, 'UTC')}
              AND p.gpu_uuid IN (SELECT gpu_uuid FROM segs WHERE n_holders > 1)
            GROUP BY p.gpu_uuid, p.job, p.minute`,
}

// rawSources compute the same rows from the raw tables; the activity test repeats
// the one in migration 0003 (gpu_minute_mv) word for word.
var rawSources = sources{
	Jobs: `(
                SELECT e.job AS job,
                       argMaxIf(e.cluster, e.ts, e.cluster != '') AS cluster,
                       argMaxIf(e.card, e.ts, e.card != '') AS card,
                       argMaxIf(e.gpu_uuids, e.ts, notEmpty(e.gpu_uuids)) AS gpu_uuids,
                       minIfOrNull(e.ts, e.event = 'submit') AS submit_time,
                       minIfOrNull(e.ts, e.event = 'start') AS start_time,
                       maxIfOrNull(e.ts, e.event IN ('end', 'preempt')) AS end_time
                FROM job_events AS e
                GROUP BY e.job
            )`,
	Minutes: `
                SELECT s.gpu_uuid AS gpu_uuid, toStartOfMinute(s.ts) AS minute,
                       toString(any(s.cluster)) AS cluster, toString(any(s.node)) AS node,
                       toString(any(s.card)) AS card, toString(any(s.mig_profile)) AS mig_profile,
                       countIf(coalesce(s.gr_engine_active, s.gpu_util) IS NOT NULL) AS activity_samples,
                       countIf(coalesce(s.gr_engine_active, s.gpu_util) IS NOT NULL
                           AND (coalesce(s.gr_engine_active, s.gpu_util) >= 0.01 OR ifNull(s.dram_active, 0) >= 0.01
                                OR ifNull(s.pcie_tx_bytes_per_s, 0) + ifNull(s.pcie_rx_bytes_per_s, 0) >= 100000000)) AS active_samples,
                       sum(toFloat64(ifNull(s.sm_active, 0))) AS sm_sum, count(s.sm_active) AS sm_n,
                       sum(toFloat64(ifNull(s.gr_engine_active, 0))) AS gr_sum, count(s.gr_engine_active) AS gr_n,
                       min(s.energy_mj) AS energy_min, max(s.energy_mj) AS energy_max
                FROM gpu_samples AS s
                WHERE s.ts >= toStartOfHour({from:DateTime64(3, 'UTC')}) - INTERVAL 1 HOUR
                  AND s.ts < {to:DateTime64(3, 'UTC')}
                GROUP BY gpu_uuid, minute`,
	ProcMinutes: `
            SELECT toString(ps.gpu_uuid) AS gpu_uuid, toString(ps.job) AS job,
                   toInt64(toUnixTimestamp(toStartOfMinute(ps.ts))) * 1000 AS minute_ms,
                   sum(toUInt64(ps.fb_used_mib)) AS mem, count(ps.sm_util) AS judged,
                   countIf(ps.sm_util IS NOT NULL AND greatest(ifNull(ps.sm_util, 0), ifNull(ps.mem_util, 0)) >= 0.01) AS act
            FROM process_samples AS ps
            WHERE ps.ts >= toStartOfMinute({from:DateTime64(3, 'UTC')}) AND ps.ts < {to:DateTime64(3, 'UTC')}
              AND ps.gpu_uuid IN (SELECT gpu_uuid FROM segs WHERE n_holders > 1)
            GROUP BY gpu_uuid, job, minute_ms`,
}

// renderCore returns the core query over src.
func renderCore(src sources) string {
	var sb strings.Builder
	if err := coreTemplate.Execute(&sb, src); err != nil {
		panic("chargeback: core query template: " + err.Error()) // fixed inputs: caught by any test
	}
	return sb.String()
}
