-- 0012: the chargeback rolled up per job — the finance views read a month in a
-- fraction of the time.
--
-- chargeback_priced joins every (hour, GPU, job) row of chargeback_hourly to the
-- price timeline three times and to chargeback_jobs, on every read: most of a
-- month's chargeback query is spent in those joins (docs/measurements.md). The
-- figures of chargeback_daily, chargeback_monthly, idle_cost and
-- unallocated_capacity (and a job's cost) need no GPU: their price depends on the card and the hour,
-- the energy price on the cluster and the hour, the queue-wait price and the labels
-- on the job. So chargeback_job_hourly holds chargeback_hourly's rows summed over
-- the GPUs of each (hour, generation, job, card, cluster) — a job of 8 GPUs is one
-- row instead of 8, the unallocated time of a card type in a cluster one row
-- instead of one per free GPU — and chargeback_job_priced joins those few rows the
-- way chargeback_priced joins the GPU rows, with the same column names.
--
-- * Filled by the analyzer in the same refresh that writes chargeback_hourly, from
--   the rows of the new generation and before that generation is recorded in
--   chargeback_refreshes (analyzer/chargeback.Refresh): readers see a generation's
--   rollup rows exactly when they see its GPU rows. The rows are written by one
--   INSERT … SELECT … GROUP BY of a fresh generation, so every key holds one row
--   and readers need no GROUP BY (that re-aggregation costs as much as the joins).
-- * chargeback_hourly's rows and how they are computed do not change: the rollup is
--   their sum, so the views' figures are the same (up to the order of float
--   additions, below the reports' 6 decimals).
-- * Prices and job labels are still joined when read: a price correction or a late
--   job event needs no refresh.
-- * Rows of superseded generations stay (one per job-hour); readers skip them like
--   chargeback_hourly_current does.
-- * job_failures and job_output take a job's GPU-hours and cost from it too
--   (silent_minutes_max keeps job_failures' node_lost rule per GPU row).
-- * This migration fills the rollup from the current generations already written
--   (those not in it yet, so running it twice adds nothing). chargeback_priced and
--   chargeback_hourly_current keep reading chargeback_hourly: their rows are per GPU.
--
-- The views keep their columns, names, types and order (CREATE OR REPLACE). Re-run
-- deploy/clickhouse/finance.sql after this migration: replacing a view resets its
-- SQL SECURITY.

CREATE TABLE IF NOT EXISTS {{.DB}}.{{.Local "chargeback_job_hourly"}} {{.OnCluster}}
(
    hour                       DateTime('UTC') COMMENT 'start of the hour (UTC)',
    generation                 UUID COMMENT 'the refresh that wrote the chargeback_hourly rows summed here',
    job                        String COMMENT 'job attempt key; empty for the time no job held the GPUs',
    card                       LowCardinality(String),
    cluster                    LowCardinality(String),
    gpu_rows                   UInt64 COMMENT 'chargeback_hourly rows summed',
    gpu_hours                  Float64,
    used_gpu_hours             Float64,
    idle_gpu_hours             Float64,
    unmeasured_gpu_hours       Float64,
    unobserved_gpu_hours       Float64,
    energy_kwh                 Float64,
    queue_wait_hours           Float64,
    sm_active_gpu_hours        Float64 COMMENT 'GPU-hours of the rows with sm_active_mean',
    sm_active_weighted         Float64 COMMENT 'sum of gpu_hours x sm_active_mean over those rows',
    gr_engine_active_gpu_hours Float64 COMMENT 'GPU-hours of the rows with gr_engine_active_mean',
    gr_engine_active_weighted  Float64 COMMENT 'sum of gpu_hours x gr_engine_active_mean over those rows',
    silent_minutes_max         Float64 COMMENT 'largest 60 x unmeasured_gpu_hours / gpu_weight of a row: minutes a GPU of the job sent no measurement'
)
ENGINE = {{.Engine "MergeTree"}}
PARTITION BY toYYYYMM(hour)
ORDER BY (hour, generation, job, card, cluster);

{{.Distributed "chargeback_job_hourly" "cityHash64(job)"}};

INSERT INTO {{.DB}}.chargeback_job_hourly
SELECT h.hour, h.generation, h.job, h.card, h.cluster,
    count(), sum(h.gpu_hours), sum(h.used_gpu_hours), sum(h.idle_gpu_hours), sum(h.unmeasured_gpu_hours),
    sum(h.unobserved_gpu_hours), sum(h.energy_kwh), sum(h.queue_wait_hours),
    sumIf(h.gpu_hours, h.sm_active_mean IS NOT NULL), sumIf(h.gpu_hours * assumeNotNull(h.sm_active_mean), h.sm_active_mean IS NOT NULL),
    sumIf(h.gpu_hours, h.gr_engine_active_mean IS NOT NULL), sumIf(h.gpu_hours * assumeNotNull(h.gr_engine_active_mean), h.gr_engine_active_mean IS NOT NULL),
    max(60 * h.unmeasured_gpu_hours / h.gpu_weight)
FROM {{.DB}}.chargeback_hourly AS h
WHERE (h.hour, h.generation) GLOBAL IN (
          SELECT r.hour, argMax(r.generation, r.refreshed_at) FROM {{.DB}}.chargeback_refreshes AS r GROUP BY r.hour)
  AND (h.hour, h.generation) GLOBAL NOT IN (SELECT DISTINCT x.hour, x.generation FROM {{.DB}}.chargeback_job_hourly AS x)
GROUP BY h.hour, h.generation, h.job, h.card, h.cluster;

CREATE VIEW IF NOT EXISTS {{.DB}}.chargeback_job_priced {{.OnCluster}} AS
SELECT
    h.hour AS hour, h.job AS job, h.cluster AS cluster, h.card AS card,
    j.team AS team, j.project AS project, j.pool AS pool, j.model_name AS model_name,
    j.status AS status, j.attempt AS attempt, j.failed_rerun AS failed_rerun,
    h.gpu_hours AS gpu_hours, h.used_gpu_hours AS used_gpu_hours, h.idle_gpu_hours AS idle_gpu_hours,
    h.unmeasured_gpu_hours AS unmeasured_gpu_hours, h.energy_kwh AS energy_kwh,
    h.queue_wait_hours AS queue_wait_hours,
    toUInt8(ifNull(p.valid_to > h.hour, 0)) AS priced,
    if(priced = 1, toFloat64(p.price_per_gpu_hour), NULL) AS price_per_gpu_hour,
    if(priced = 1, toString(p.currency), '') AS currency,
    h.gpu_hours * price_per_gpu_hour AS cost,
    h.idle_gpu_hours * price_per_gpu_hour AS idle_cost,
    h.unobserved_gpu_hours AS unobserved_gpu_hours,
    j.queue AS queue,
    h.queue_wait_hours * toFloat64(j.requested_gpus) AS queue_wait_gpu_hours,
    toUInt8(ifNull(qp.valid_to > h.hour, 0)) AS queue_wait_pool_priced,
    multiIf(queue_wait_pool_priced = 1, toFloat64(qp.price_per_gpu_hour), priced = 1, price_per_gpu_hour, NULL) AS queue_wait_price_per_gpu_hour,
    multiIf(queue_wait_pool_priced = 1, toString(qp.currency), currency) AS queue_wait_currency,
    queue_wait_gpu_hours * queue_wait_price_per_gpu_hour AS queue_wait_cost,
    toUInt8(ifNull(ep.valid_to > h.hour, 0)) AS energy_priced,
    if(energy_priced = 1, toFloat64(ep.price_per_gpu_hour), NULL) AS energy_price_per_kwh,
    if(energy_priced = 1, toString(ep.currency), '') AS energy_currency,
    h.energy_kwh * energy_price_per_kwh AS energy_cost,
    h.gpu_rows AS gpu_rows,
    h.sm_active_gpu_hours AS sm_active_gpu_hours,
    h.sm_active_weighted AS sm_active_weighted,
    h.gr_engine_active_gpu_hours AS gr_engine_active_gpu_hours,
    h.gr_engine_active_weighted AS gr_engine_active_weighted,
    h.silent_minutes_max AS silent_minutes_max
FROM (
    -- the current generation of each hour, as chargeback_hourly_current reads it
    SELECT r.hour AS hour, r.generation AS generation, r.job AS job, r.card AS card,
           r.cluster AS cluster, r.gpu_rows AS gpu_rows, r.gpu_hours AS gpu_hours, r.used_gpu_hours AS used_gpu_hours,
           r.idle_gpu_hours AS idle_gpu_hours, r.unmeasured_gpu_hours AS unmeasured_gpu_hours, r.unobserved_gpu_hours AS unobserved_gpu_hours, r.energy_kwh AS energy_kwh,
           r.queue_wait_hours AS queue_wait_hours, r.sm_active_gpu_hours AS sm_active_gpu_hours, r.sm_active_weighted AS sm_active_weighted, r.gr_engine_active_gpu_hours AS gr_engine_active_gpu_hours,
           r.gr_engine_active_weighted AS gr_engine_active_weighted, r.silent_minutes_max AS silent_minutes_max
    FROM {{.DB}}.chargeback_job_hourly AS r
    WHERE (r.hour, r.generation) GLOBAL IN (
        SELECT x.hour, argMax(x.generation, x.refreshed_at) FROM {{.DB}}.chargeback_refreshes AS x GROUP BY x.hour
    )
) AS h
ASOF LEFT JOIN {{.DB}}.price_timeline AS p ON h.card = p.card AND h.hour >= p.valid_from
LEFT JOIN {{.DB}}.chargeback_jobs AS j ON h.job = j.job
ASOF LEFT JOIN {{.DB}}.price_timeline AS qp ON concat('queue-wait:', j.pool) = qp.card AND h.hour >= qp.valid_from
ASOF LEFT JOIN {{.DB}}.price_timeline AS ep ON concat('energy:', h.cluster) = ep.card AND h.hour >= ep.valid_from;

CREATE OR REPLACE VIEW {{.DB}}.chargeback_daily {{.OnCluster}} AS
SELECT
    toDate(c.hour)                                    AS day,
    c.team                                            AS team,
    c.project                                         AS project,
    c.model_name                                      AS model_name,
    c.pool                                            AS pool,
    c.card                                            AS card,
    anyIf(c.currency, c.priced = 1)                   AS currency,
    uniqExact(c.job)                                  AS jobs,
    sum(c.gpu_hours)                                  AS gpu_hours,
    sum(c.used_gpu_hours)                             AS used_gpu_hours,
    sum(c.idle_gpu_hours)                             AS idle_gpu_hours,
    sum(c.unmeasured_gpu_hours)                       AS unmeasured_gpu_hours,
    sumIf(c.gpu_hours, c.priced = 0)                  AS unpriced_gpu_hours,
    if(countIf(c.priced = 0) > 0 OR uniqExactIf(c.currency, c.priced = 1) > 1, NULL, sum(c.cost)) AS cost,
    if(countIf(c.priced = 0) > 0 OR uniqExactIf(c.currency, c.priced = 1) > 1, NULL, sum(c.idle_cost)) AS idle_cost,
    sumIf(c.gpu_hours, c.failed_rerun = 1)            AS failed_rerun_gpu_hours,
    if(countIf(c.priced = 0 AND c.failed_rerun = 1) > 0 OR uniqExactIf(c.currency, c.priced = 1 AND c.failed_rerun = 1) > 1,
       NULL, ifNull(sumIf(c.cost, c.failed_rerun = 1), 0)) AS failed_rerun_cost,
    sum(c.queue_wait_hours)                           AS queue_wait_hours,
    sum(c.energy_kwh)                                 AS energy_kwh,
    sum(c.unobserved_gpu_hours)                       AS unobserved_gpu_hours,
    sum(c.queue_wait_gpu_hours)                       AS queue_wait_gpu_hours,
    anyIf(c.queue_wait_currency, c.queue_wait_currency != '') AS queue_wait_currency,
    if(countIf(c.queue_wait_gpu_hours > 0 AND c.queue_wait_currency = '') > 0 OR uniqExactIf(c.queue_wait_currency, c.queue_wait_gpu_hours > 0) > 1,
       NULL, ifNull(sumIf(c.queue_wait_cost, c.queue_wait_gpu_hours > 0), 0)) AS queue_wait_cost,
    anyIf(c.energy_currency, c.energy_currency != '') AS energy_currency,
    sumIf(c.energy_kwh, c.energy_currency = '')       AS unpriced_energy_kwh,
    if(countIf(c.energy_kwh > 0 AND c.energy_currency = '') > 0 OR uniqExactIf(c.energy_currency, c.energy_kwh > 0) > 1,
       NULL, ifNull(sumIf(c.energy_cost, c.energy_kwh > 0), 0)) AS energy_cost,
    c.cluster                                         AS cluster
FROM {{.DB}}.chargeback_job_priced AS c
WHERE c.job != ''
GROUP BY day, team, project, model_name, pool, card, cluster;

CREATE OR REPLACE VIEW {{.DB}}.chargeback_monthly {{.OnCluster}} AS
SELECT
    toStartOfMonth(c.hour)                            AS month,
    c.team                                            AS team,
    c.project                                         AS project,
    c.model_name                                      AS model_name,
    c.pool                                            AS pool,
    c.card                                            AS card,
    anyIf(c.currency, c.priced = 1)                   AS currency,
    uniqExact(c.job)                                  AS jobs,
    sum(c.gpu_hours)                                  AS gpu_hours,
    sum(c.used_gpu_hours)                             AS used_gpu_hours,
    sum(c.idle_gpu_hours)                             AS idle_gpu_hours,
    sum(c.unmeasured_gpu_hours)                       AS unmeasured_gpu_hours,
    sumIf(c.gpu_hours, c.priced = 0)                  AS unpriced_gpu_hours,
    if(countIf(c.priced = 0) > 0 OR uniqExactIf(c.currency, c.priced = 1) > 1, NULL, sum(c.cost)) AS cost,
    if(countIf(c.priced = 0) > 0 OR uniqExactIf(c.currency, c.priced = 1) > 1, NULL, sum(c.idle_cost)) AS idle_cost,
    sumIf(c.gpu_hours, c.failed_rerun = 1)            AS failed_rerun_gpu_hours,
    if(countIf(c.priced = 0 AND c.failed_rerun = 1) > 0 OR uniqExactIf(c.currency, c.priced = 1 AND c.failed_rerun = 1) > 1,
       NULL, ifNull(sumIf(c.cost, c.failed_rerun = 1), 0)) AS failed_rerun_cost,
    sum(c.queue_wait_hours)                           AS queue_wait_hours,
    sum(c.energy_kwh)                                 AS energy_kwh,
    sum(c.unobserved_gpu_hours)                       AS unobserved_gpu_hours,
    sum(c.queue_wait_gpu_hours)                       AS queue_wait_gpu_hours,
    anyIf(c.queue_wait_currency, c.queue_wait_currency != '') AS queue_wait_currency,
    if(countIf(c.queue_wait_gpu_hours > 0 AND c.queue_wait_currency = '') > 0 OR uniqExactIf(c.queue_wait_currency, c.queue_wait_gpu_hours > 0) > 1,
       NULL, ifNull(sumIf(c.queue_wait_cost, c.queue_wait_gpu_hours > 0), 0)) AS queue_wait_cost,
    anyIf(c.energy_currency, c.energy_currency != '') AS energy_currency,
    sumIf(c.energy_kwh, c.energy_currency = '')       AS unpriced_energy_kwh,
    if(countIf(c.energy_kwh > 0 AND c.energy_currency = '') > 0 OR uniqExactIf(c.energy_currency, c.energy_kwh > 0) > 1,
       NULL, ifNull(sumIf(c.energy_cost, c.energy_kwh > 0), 0)) AS energy_cost,
    c.cluster                                         AS cluster
FROM {{.DB}}.chargeback_job_priced AS c
WHERE c.job != ''
GROUP BY month, team, project, model_name, pool, card, cluster;

CREATE OR REPLACE VIEW {{.DB}}.idle_cost {{.OnCluster}} AS
SELECT
    toDate(c.hour)                                    AS day,
    c.team                                            AS team,
    c.project                                         AS project,
    c.job                                             AS job,
    c.model_name                                      AS model_name,
    c.pool                                            AS pool,
    c.card                                            AS card,
    anyIf(c.currency, c.priced = 1)                   AS currency,
    sum(c.gpu_hours)                                  AS gpu_hours,
    sum(c.idle_gpu_hours)                             AS idle_gpu_hours,
    sum(c.idle_gpu_hours) / nullIf(sum(c.used_gpu_hours) + sum(c.idle_gpu_hours), 0) AS idle_ratio,
    if(countIf(c.priced = 0) > 0 OR uniqExactIf(c.currency, c.priced = 1) > 1, NULL, sum(c.idle_cost)) AS idle_cost,
    c.cluster                                         AS cluster
FROM {{.DB}}.chargeback_job_priced AS c
WHERE c.job != ''
GROUP BY day, team, project, job, model_name, pool, card, cluster;

CREATE OR REPLACE VIEW {{.DB}}.unallocated_capacity {{.OnCluster}} AS
SELECT
    toDate(c.hour)                                    AS day,
    c.cluster                                         AS cluster,
    c.card                                            AS card,
    anyIf(c.currency, c.priced = 1)                   AS currency,
    sum(c.gpu_hours)                                  AS capacity_gpu_hours,
    sumIf(c.gpu_hours, c.job != '')                   AS allocated_gpu_hours,
    sumIf(c.gpu_hours, c.job = '')                    AS unallocated_gpu_hours,
    sumIf(c.used_gpu_hours, c.job = '')               AS unallocated_active_gpu_hours,
    if(countIf(c.job = '' AND c.priced = 0) > 0 OR uniqExactIf(c.currency, c.job = '' AND c.priced = 1) > 1,
       NULL, ifNull(sumIf(c.cost, c.job = ''), 0))    AS unallocated_cost,
    sumIf(c.energy_kwh, c.job = '')                   AS unallocated_energy_kwh
FROM {{.DB}}.chargeback_job_priced AS c
GROUP BY day, cluster, card;

CREATE OR REPLACE VIEW {{.DB}}.job_failures {{.OnCluster}} AS
SELECT
    j.job AS job, j.cluster AS cluster, j.team AS team, j.project AS project, j.queue AS queue,
    j.pool AS pool, j.model_name AS model_name,
    if(c.card != '', c.card, toString(j.card)) AS card,
    j.gpus AS requested_gpus, j.attempt AS attempt, j.status AS status, j.exit_code AS exit_code,
    toUInt8(if(j.exit_code > 128 AND j.exit_code < 160, j.exit_code - 128, 0)) AS signal,
    j.start_time AS start_time, j.end_time AS end_time,
    ev.end_reason AS end_reason,
    a.decision AS scheduler_decision,
    toUInt64(x.xid_samples) AS xid_samples,
    toUInt32(xc.xid) AS xid,
    c.silent_minutes AS silent_minutes,
    multiIf(
        j.status = 'succeeded', '',
        j.status = 'preempted' OR a.decision IN ('preempt', 'reclaim'), 'preempted',
        a.decision IN ('stop', 'kill', 'expire'), 'stopped',
        j.status = 'failed' AND c.silent_minutes >= 5 AND c.measured_gpu_hours > 0, 'node_lost',
        ev.end_reason IN ('OOMKilled', 'OUT_OF_MEMORY'), 'oom_killed',
        ev.end_reason IN ('DeadlineExceeded', 'TIMEOUT'), 'time_limit',
        j.status = 'failed' AND x.xid_samples > 0 AND xc.xid IN (48, 63, 64, 92, 94, 95), 'gpu_ecc',
        j.status = 'failed' AND x.xid_samples > 0, 'gpu_xid',
        j.status = 'failed' AND j.exit_code = 137, 'killed',
        j.status = 'failed' AND j.exit_code > 128 AND j.exit_code < 160, 'crashed',
        j.status = 'failed' AND j.exit_code > 0 AND j.exit_code < 128, 'user_error',
        j.status = 'cancelled', 'cancelled',
        'unknown') AS reason,
    c.gpu_hours AS gpu_hours, c.currency AS currency, c.cost AS cost,
    cj.failed_rerun AS failed_rerun
FROM {{.DB}}.jobs AS j
LEFT JOIN (SELECT cjb.job AS job, cjb.failed_rerun AS failed_rerun FROM {{.DB}}.chargeback_jobs AS cjb) AS cj ON cj.job = j.job
LEFT JOIN (
    SELECT e.job AS job, argMax(e.labels['gpupool.io/end-reason'], e.ts) AS end_reason
    FROM {{.DB}}.job_events AS e
    WHERE e.event = 'end'
    GROUP BY e.job
) AS ev ON ev.job = j.job
LEFT JOIN (
    SELECT ac.job AS job, groupUniqArray(toString(ac.decision)) AS ds,
           multiIf(has(ds, 'preempt'), 'preempt', has(ds, 'reclaim'), 'reclaim', has(ds, 'kill'), 'kill',
                   has(ds, 'stop'), 'stop', has(ds, 'expire'), 'expire', '') AS decision
    FROM {{.DB}}.actions AS ac
    WHERE ac.outcome = 'ok' AND ac.job != '' AND ac.decision IN ('preempt', 'reclaim', 'kill', 'stop', 'expire')
    GROUP BY ac.job
) AS a ON a.job = j.job
LEFT JOIN (
    SELECT jg.job AS job, sum(m.n) AS xid_samples
    FROM (
        SELECT jb.job AS job, arrayJoin(jb.gpu_uuids) AS gpu_uuid, jb.start_time AS start_time, jb.end_time AS end_time
        FROM {{.DB}}.jobs AS jb
        WHERE jb.state = 'ended' AND jb.start_time IS NOT NULL
    ) AS jg
    INNER JOIN (
        SELECT toString(g.gpu_uuid) AS gpu_uuid, g.minute AS minute, sum(g.xid_samples) AS n
        FROM {{.DB}}.gpu_minute AS g
        WHERE g.xid_samples > 0
        GROUP BY gpu_uuid, minute
    ) AS m ON m.gpu_uuid = jg.gpu_uuid
    WHERE m.minute >= toStartOfMinute(assumeNotNull(jg.start_time)) AND m.minute <= assumeNotNull(jg.end_time) + INTERVAL 2 MINUTE
    GROUP BY jg.job
) AS x ON x.job = j.job
LEFT JOIN (
    SELECT jg.job AS job, argMax(s.xid, s.ts) AS xid
    FROM (
        SELECT jb.job AS job, arrayJoin(jb.gpu_uuids) AS gpu_uuid, jb.start_time AS start_time, jb.end_time AS end_time
        FROM {{.DB}}.jobs AS jb
        WHERE jb.state = 'ended' AND jb.start_time IS NOT NULL
    ) AS jg
    INNER JOIN (
        SELECT toString(gs.gpu_uuid) AS gpu_uuid, gs.ts AS ts, gs.xid AS xid
        FROM {{.DB}}.gpu_samples AS gs
        WHERE gs.xid != 0
    ) AS s ON s.gpu_uuid = jg.gpu_uuid
    WHERE s.ts >= assumeNotNull(jg.start_time) AND s.ts <= assumeNotNull(jg.end_time) + INTERVAL 2 MINUTE
    GROUP BY jg.job
) AS xc ON xc.job = j.job
LEFT JOIN (
    SELECT p.job AS job, toString(any(p.card)) AS card,
           sum(p.gpu_hours) AS gpu_hours,
           sum(p.used_gpu_hours) + sum(p.idle_gpu_hours) AS measured_gpu_hours,
           anyIf(p.currency, p.priced = 1) AS currency,
           if(countIf(p.priced = 0) > 0 OR uniqExactIf(p.currency, p.priced = 1) > 1, NULL, sum(p.cost)) AS cost,
           max(p.silent) AS silent_minutes
    FROM (
        SELECT cp.job AS job, cp.card AS card, cp.gpu_hours AS gpu_hours, cp.used_gpu_hours AS used_gpu_hours,
               cp.idle_gpu_hours AS idle_gpu_hours, cp.priced AS priced, cp.currency AS currency, cp.cost AS cost,
               if(cp.hour >= toStartOfHour(assumeNotNull(je.end_time) - INTERVAL 30 MINUTE),
                  cp.silent_minutes_max, 0) AS silent
        FROM {{.DB}}.chargeback_job_priced AS cp
        INNER JOIN (SELECT jb.job AS job, jb.end_time AS end_time FROM {{.DB}}.jobs AS jb WHERE jb.state = 'ended') AS je
            ON je.job = cp.job
        WHERE cp.job != ''
    ) AS p
    GROUP BY p.job
) AS c ON c.job = j.job
WHERE j.state = 'ended';

CREATE OR REPLACE VIEW {{.DB}}.job_output {{.OnCluster}} AS
SELECT
    o.job AS job, j.cluster AS cluster, j.team AS team, j.project AS project, j.model_name AS model_name,
    if(c.card != '', c.card, toString(j.card)) AS card,
    toStartOfMonth(toDateTime(ifNull(j.end_time, j.updated_at), 'UTC')) AS month,
    o.output_unit AS output_unit,
    o.output_units AS output_units,
    multiIf(o.output_unit = 'tokens', 1000000, o.output_unit IN ('samples', 'requests'), 1000, 1) AS per_units,
    c.gpu_hours AS gpu_hours, c.currency AS currency, c.cost AS cost,
    o.output_units / nullIf(c.gpu_hours, 0) AS output_per_gpu_hour,
    c.cost / nullIf(o.output_units, 0) * per_units AS cost_per_units,
    j.end_time AS end_time
FROM (
    SELECT e.job AS job,
           argMaxIf(e.labels['gpupool.io/output-unit'], e.ts, e.labels['gpupool.io/output-units'] != '') AS output_unit,
           argMaxIf(toFloat64OrNull(e.labels['gpupool.io/output-units']), e.ts, e.labels['gpupool.io/output-units'] != '') AS output_units
    FROM {{.DB}}.job_events AS e
    GROUP BY e.job
) AS o
INNER JOIN {{.DB}}.jobs AS j ON j.job = o.job
LEFT JOIN (
    SELECT p.job AS job, toString(any(p.card)) AS card, sum(p.gpu_hours) AS gpu_hours,
           anyIf(p.currency, p.priced = 1) AS currency,
           if(countIf(p.priced = 0) > 0 OR uniqExactIf(p.currency, p.priced = 1) > 1, NULL, sum(p.cost)) AS cost
    FROM {{.DB}}.chargeback_job_priced AS p
    WHERE p.job != ''
    GROUP BY p.job
) AS c ON c.job = o.job
WHERE j.start_time IS NOT NULL;
