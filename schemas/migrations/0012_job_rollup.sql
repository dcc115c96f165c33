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

-- The view chargeback_job_priced this migration (re)defined is now schemas/views/chargeback_job_priced.sql, re-applied on every migrate.

-- The view chargeback_daily this migration (re)defined is now schemas/views/chargeback_daily.sql, re-applied on every migrate.

-- The view chargeback_monthly this migration (re)defined is now schemas/views/chargeback_monthly.sql, re-applied on every migrate.

-- The view idle_cost this migration (re)defined is now schemas/views/idle_cost.sql, re-applied on every migrate.

-- The view unallocated_capacity this migration (re)defined is now schemas/views/unallocated_capacity.sql, re-applied on every migrate.

-- The view job_failures this migration (re)defined is now schemas/views/job_failures.sql, re-applied on every migrate.

-- The view job_output this migration (re)defined is now schemas/views/job_output.sql, re-applied on every migrate.
