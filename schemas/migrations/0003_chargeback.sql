-- 0003: chargeback — the price book, rollups by materialized view, the hourly
-- chargeback table the analyzer refreshes, and the finance views over it.
-- docs/finance.md documents every view's columns; a test keeps the two in step.
--
-- How the pieces fit:
-- * gpu_samples feeds gpu_minute and gpu_hour, process_samples feeds process_minute,
--   by materialized views, at insert time. Raw samples have a TTL; rollups have none,
--   so chargeback for any past month is computed without raw samples.
-- * Rollups are AggregatingMergeTree with SimpleAggregateFunction columns (sum, min,
--   max, any): rows of one key are merged in the background, and every query
--   re-aggregates with GROUP BY (never FINAL), so an unmerged part never counts twice.
-- * Exactly once: ingest inserts with a deduplication token and
--   deduplicate_blocks_in_dependent_materialized_views = 1; each rollup keeps its own
--   deduplication window, so a redelivered batch that the raw table drops is dropped
--   by the rollups too instead of being added a second time.
-- * Activity: a sample is measured when it has the graphics engine's activity (or,
--   from NVML-only sources, GPU utilisation); a measured sample is active when the
--   engine is at least 1 % busy, or DRAM at least 1 % busy, or PCIe moves at least
--   100 MB/s (a data loader is working). The thresholds are fixed here because the
--   rollups count against them at insert time; a change is a new migration.
-- * chargeback_hourly holds one row per (hour, GPU, job attempt) and one per
--   (hour, GPU) for time no job held (job = ''): the analyzer writes closed hours
--   with an INSERT … SELECT over the rollups (analyzer/chargeback.Refresh). Every
--   refresh is a new generation; chargeback_refreshes records which generation is
--   current per hour, and readers see only that one, so a refresh that is repeated,
--   or interrupted before its log row, never double-counts. Prices and job labels
--   are joined when read, so a price correction needs no refresh.
-- * Prices are per whole hour: the price of an hour is the price book row in effect
--   at the hour's start.

CREATE TABLE IF NOT EXISTS {{.DB}}.{{.Local "price_book"}} {{.OnCluster}}
(
    card               LowCardinality(String) COMMENT 'card type as in gpu_samples.card, e.g. H100-80GB; a MIG slice pays its compute share of it',
    effective_from     DateTime('UTC') COMMENT 'start of the price (UTC), applied from the first whole hour at or after it',
    effective_to       Nullable(DateTime('UTC')) COMMENT 'end of the price (exclusive); NULL: until the next price of the card starts',
    price_per_gpu_hour Decimal(18, 6) COMMENT 'price of one whole GPU for one hour, in currency',
    currency           LowCardinality(String) COMMENT 'ISO 4217 code, e.g. USD',
    note               String COMMENT 'free text: contract, quote, who set it',
    deleted            UInt8 DEFAULT 0 COMMENT '1 withdraws the (card, effective_from) row',
    updated_at         DateTime64(3, 'UTC') DEFAULT now64(3) COMMENT 'version: the latest row per (card, effective_from) wins'
)
ENGINE = {{.Engine "ReplacingMergeTree" "updated_at"}}
ORDER BY (card, effective_from)
SETTINGS {{.DedupWindow 1000}};

CREATE TABLE IF NOT EXISTS {{.DB}}.{{.Local "gpu_minute"}} {{.OnCluster}}
(
    minute                   DateTime('UTC') CODEC(DoubleDelta, ZSTD(1)),
    gpu_uuid                 LowCardinality(String),
    cluster                  SimpleAggregateFunction(any, LowCardinality(String)),
    node                     SimpleAggregateFunction(any, LowCardinality(String)),
    card                     SimpleAggregateFunction(any, LowCardinality(String)),
    mig_profile              SimpleAggregateFunction(any, LowCardinality(String)),
    samples                  SimpleAggregateFunction(sum, UInt64) COMMENT 'GPU samples in the minute',
    activity_samples         SimpleAggregateFunction(sum, UInt64) COMMENT 'samples with an engine activity measurement',
    active_samples           SimpleAggregateFunction(sum, UInt64) COMMENT 'measured samples that were active (see the header)',
    gr_engine_active_sum     SimpleAggregateFunction(sum, Float64) COMMENT 'sum of gr_engine_active (ratio) over the samples that have it',
    gr_engine_active_samples SimpleAggregateFunction(sum, UInt64),
    sm_active_sum            SimpleAggregateFunction(sum, Float64),
    sm_active_samples        SimpleAggregateFunction(sum, UInt64),
    tensor_active_sum        SimpleAggregateFunction(sum, Float64),
    tensor_active_samples    SimpleAggregateFunction(sum, UInt64),
    dram_active_sum          SimpleAggregateFunction(sum, Float64),
    dram_active_samples      SimpleAggregateFunction(sum, UInt64),
    fb_used_mib_max          SimpleAggregateFunction(max, UInt32),
    fb_used_mib_sum          SimpleAggregateFunction(sum, UInt64),
    power_w_sum              SimpleAggregateFunction(sum, Float64),
    power_samples            SimpleAggregateFunction(sum, UInt64),
    energy_mj_min            SimpleAggregateFunction(min, UInt64) COMMENT 'energy counter, millijoules',
    energy_mj_max            SimpleAggregateFunction(max, UInt64) COMMENT 'energy counter, millijoules',
    xid_samples              SimpleAggregateFunction(sum, UInt64) COMMENT 'samples reporting an XID error'
)
ENGINE = {{.Engine "AggregatingMergeTree"}}
PARTITION BY toYYYYMM(minute)
ORDER BY (gpu_uuid, minute)
SETTINGS {{.DedupWindow 10000}};

CREATE MATERIALIZED VIEW IF NOT EXISTS {{.DB}}.gpu_minute_mv {{.OnCluster}} TO {{.DB}}.{{.Local "gpu_minute"}} AS
SELECT
    toStartOfMinute(ts)                               AS minute,
    gpu_uuid,
    any(cluster)                                      AS cluster,
    any(node)                                         AS node,
    any(card)                                         AS card,
    any(mig_profile)                                  AS mig_profile,
    count()                                           AS samples,
    countIf(coalesce(gr_engine_active, gpu_util) IS NOT NULL) AS activity_samples,
    countIf(coalesce(gr_engine_active, gpu_util) IS NOT NULL
        AND (coalesce(gr_engine_active, gpu_util) >= 0.01 OR ifNull(dram_active, 0) >= 0.01
             OR ifNull(pcie_tx_bytes_per_s, 0) + ifNull(pcie_rx_bytes_per_s, 0) >= 100000000)) AS active_samples,
    sum(toFloat64(ifNull(gr_engine_active, 0)))       AS gr_engine_active_sum,
    count(gr_engine_active)                           AS gr_engine_active_samples,
    sum(toFloat64(ifNull(sm_active, 0)))              AS sm_active_sum,
    count(sm_active)                                  AS sm_active_samples,
    sum(toFloat64(ifNull(tensor_active, 0)))          AS tensor_active_sum,
    count(tensor_active)                              AS tensor_active_samples,
    sum(toFloat64(ifNull(dram_active, 0)))            AS dram_active_sum,
    count(dram_active)                                AS dram_active_samples,
    max(fb_used_mib)                                  AS fb_used_mib_max,
    sum(toUInt64(fb_used_mib))                        AS fb_used_mib_sum,
    sum(toFloat64(ifNull(power_w, 0)))                AS power_w_sum,
    count(power_w)                                    AS power_samples,
    min(energy_mj)                                    AS energy_mj_min,
    max(energy_mj)                                    AS energy_mj_max,
    countIf(xid != 0)                                 AS xid_samples
FROM {{.DB}}.{{.Local "gpu_samples"}}
GROUP BY gpu_uuid, minute;


CREATE TABLE IF NOT EXISTS {{.DB}}.{{.Local "gpu_hour"}} {{.OnCluster}}
(
    hour                     DateTime('UTC') CODEC(DoubleDelta, ZSTD(1)),
    gpu_uuid                 LowCardinality(String),
    cluster                  SimpleAggregateFunction(any, LowCardinality(String)),
    node                     SimpleAggregateFunction(any, LowCardinality(String)),
    card                     SimpleAggregateFunction(any, LowCardinality(String)),
    mig_profile              SimpleAggregateFunction(any, LowCardinality(String)),
    samples                  SimpleAggregateFunction(sum, UInt64) COMMENT 'GPU samples in the hour',
    activity_samples         SimpleAggregateFunction(sum, UInt64) COMMENT 'samples with an engine activity measurement',
    active_samples           SimpleAggregateFunction(sum, UInt64) COMMENT 'measured samples that were active (see the header)',
    gr_engine_active_sum     SimpleAggregateFunction(sum, Float64),
    gr_engine_active_samples SimpleAggregateFunction(sum, UInt64),
    sm_active_sum            SimpleAggregateFunction(sum, Float64),
    sm_active_samples        SimpleAggregateFunction(sum, UInt64),
    tensor_active_sum        SimpleAggregateFunction(sum, Float64),
    tensor_active_samples    SimpleAggregateFunction(sum, UInt64),
    dram_active_sum          SimpleAggregateFunction(sum, Float64),
    dram_active_samples      SimpleAggregateFunction(sum, UInt64),
    fb_used_mib_max          SimpleAggregateFunction(max, UInt32),
    fb_used_mib_sum          SimpleAggregateFunction(sum, UInt64),
    power_w_sum              SimpleAggregateFunction(sum, Float64),
    power_samples            SimpleAggregateFunction(sum, UInt64),
    energy_mj_min            SimpleAggregateFunction(min, UInt64) COMMENT 'energy counter, millijoules',
    energy_mj_max            SimpleAggregateFunction(max, UInt64) COMMENT 'energy counter, millijoules',
    xid_samples              SimpleAggregateFunction(sum, UInt64) COMMENT 'samples reporting an XID error'
)
ENGINE = {{.Engine "AggregatingMergeTree"}}
PARTITION BY toYYYYMM(hour)
ORDER BY (gpu_uuid, hour)
SETTINGS {{.DedupWindow 10000}};

CREATE MATERIALIZED VIEW IF NOT EXISTS {{.DB}}.gpu_hour_mv {{.OnCluster}} TO {{.DB}}.{{.Local "gpu_hour"}} AS
SELECT
    toStartOfHour(ts)                                 AS hour,
    gpu_uuid,
    any(cluster)                                      AS cluster,
    any(node)                                         AS node,
    any(card)                                         AS card,
    any(mig_profile)                                  AS mig_profile,
    count()                                           AS samples,
    countIf(coalesce(gr_engine_active, gpu_util) IS NOT NULL) AS activity_samples,
    countIf(coalesce(gr_engine_active, gpu_util) IS NOT NULL
        AND (coalesce(gr_engine_active, gpu_util) >= 0.01 OR ifNull(dram_active, 0) >= 0.01
             OR ifNull(pcie_tx_bytes_per_s, 0) + ifNull(pcie_rx_bytes_per_s, 0) >= 100000000)) AS active_samples,
    sum(toFloat64(ifNull(gr_engine_active, 0)))       AS gr_engine_active_sum,
    count(gr_engine_active)                           AS gr_engine_active_samples,
    sum(toFloat64(ifNull(sm_active, 0)))              AS sm_active_sum,
    count(sm_active)                                  AS sm_active_samples,
    sum(toFloat64(ifNull(tensor_active, 0)))          AS tensor_active_sum,
    count(tensor_active)                              AS tensor_active_samples,
    sum(toFloat64(ifNull(dram_active, 0)))            AS dram_active_sum,
    count(dram_active)                                AS dram_active_samples,
    max(fb_used_mib)                                  AS fb_used_mib_max,
    sum(toUInt64(fb_used_mib))                        AS fb_used_mib_sum,
    sum(toFloat64(ifNull(power_w, 0)))                AS power_w_sum,
    count(power_w)                                    AS power_samples,
    min(energy_mj)                                    AS energy_mj_min,
    max(energy_mj)                                    AS energy_mj_max,
    countIf(xid != 0)                                 AS xid_samples
FROM {{.DB}}.{{.Local "gpu_samples"}}
GROUP BY gpu_uuid, hour;

CREATE TABLE IF NOT EXISTS {{.DB}}.{{.Local "process_minute"}} {{.OnCluster}}
(
    minute           DateTime('UTC') CODEC(DoubleDelta, ZSTD(1)),
    gpu_uuid         LowCardinality(String),
    job              LowCardinality(String) COMMENT 'job key; empty when the process could not be attributed',
    cluster          SimpleAggregateFunction(any, LowCardinality(String)),
    node             SimpleAggregateFunction(any, LowCardinality(String)),
    samples          SimpleAggregateFunction(sum, UInt64) COMMENT 'process samples: one per process per tick',
    fb_used_mib_sum  SimpleAggregateFunction(sum, UInt64) COMMENT 'memory summed over process samples (MiB x samples): memory-time, splits a shared GPU',
    fb_used_mib_max  SimpleAggregateFunction(max, UInt32) COMMENT 'largest memory one process of the job held, MiB',
    sm_util_sum      SimpleAggregateFunction(sum, Float64),
    sm_util_samples  SimpleAggregateFunction(sum, UInt64),
    mem_util_sum     SimpleAggregateFunction(sum, Float64),
    mem_util_samples SimpleAggregateFunction(sum, UInt64)
)
ENGINE = {{.Engine "AggregatingMergeTree"}}
PARTITION BY toYYYYMM(minute)
ORDER BY (gpu_uuid, job, minute)
SETTINGS {{.DedupWindow 10000}};

CREATE MATERIALIZED VIEW IF NOT EXISTS {{.DB}}.process_minute_mv {{.OnCluster}} TO {{.DB}}.{{.Local "process_minute"}} AS
SELECT
    toStartOfMinute(ts)                  AS minute,
    gpu_uuid,
    job,
    any(cluster)                         AS cluster,
    any(node)                            AS node,
    count()                              AS samples,
    sum(toUInt64(fb_used_mib))           AS fb_used_mib_sum,
    max(fb_used_mib)                     AS fb_used_mib_max,
    sum(toFloat64(ifNull(sm_util, 0)))   AS sm_util_sum,
    count(sm_util)                       AS sm_util_samples,
    sum(toFloat64(ifNull(mem_util, 0)))  AS mem_util_sum,
    count(mem_util)                      AS mem_util_samples
FROM {{.DB}}.{{.Local "process_samples"}}
GROUP BY gpu_uuid, job, minute;

CREATE TABLE IF NOT EXISTS {{.DB}}.{{.Local "chargeback_hourly"}} {{.OnCluster}}
(
    hour                  DateTime('UTC') COMMENT 'start of the hour (UTC)',
    gpu_uuid              LowCardinality(String) COMMENT 'GPU-… or MIG-…',
    job                   String COMMENT 'job attempt key; empty for the time no job held the GPU',
    generation            UUID COMMENT 'the refresh that wrote the row (see chargeback_refreshes)',
    refreshed_at          DateTime64(3, 'UTC'),
    cluster               LowCardinality(String),
    node                  LowCardinality(String),
    card                  LowCardinality(String) COMMENT 'card type; the job''s requested card when the GPU never reported',
    mig_profile           LowCardinality(String),
    gpu_weight            Float64 COMMENT 'GPUs the unit counts as: 1, or a MIG slice''s compute slices / 7',
    gpu_hours             Float64 COMMENT 'GPU-hours held (weighted, shared GPUs split)',
    used_gpu_hours        Float64 COMMENT 'measured and active',
    idle_gpu_hours        Float64 COMMENT 'measured and not active',
    unmeasured_gpu_hours  Float64 COMMENT 'held with no activity measurement',
    energy_kwh            Float64 COMMENT 'from the energy counter, shared like the GPU-hours',
    sm_active_mean        Nullable(Float64) COMMENT 'mean SM activity, ratio 0..1',
    gr_engine_active_mean Nullable(Float64) COMMENT 'mean graphics engine activity, ratio 0..1',
    queue_wait_hours      Float64 COMMENT 'submit to start, on the job''s first GPU in the hour it started'
)
ENGINE = {{.Engine "ReplacingMergeTree" "refreshed_at"}}
PARTITION BY toYYYYMM(hour)
ORDER BY (hour, gpu_uuid, job);

CREATE TABLE IF NOT EXISTS {{.DB}}.{{.Local "chargeback_refreshes"}} {{.OnCluster}}
(
    hour         DateTime('UTC') COMMENT 'hour refreshed',
    generation   UUID COMMENT 'rows of chargeback_hourly written by this refresh',
    refreshed_at DateTime64(3, 'UTC') COMMENT 'the latest refresh of an hour is current',
    row_count    UInt64 COMMENT 'rows written for the hour',
    checksum     UInt64 COMMENT 'fingerprint of the rows: a refresh that computes the same skips the hour'
)
ENGINE = {{.Engine "ReplacingMergeTree" "refreshed_at"}}
ORDER BY hour;

{{.Distributed "price_book" "cityHash64(card)"}};

{{.Distributed "gpu_minute" "cityHash64(gpu_uuid)"}};

{{.Distributed "gpu_hour" "cityHash64(gpu_uuid)"}};

{{.Distributed "process_minute" "cityHash64(gpu_uuid)"}};

{{.Distributed "chargeback_hourly" "cityHash64(gpu_uuid)"}};

{{.Distributed "chargeback_refreshes" "cityHash64(hour)"}};

CREATE VIEW IF NOT EXISTS {{.DB}}.price_book_current {{.OnCluster}} AS
SELECT
    p.card                                            AS card,
    p.effective_from                                  AS effective_from,
    argMax(tuple(p.effective_to), p.updated_at).1     AS effective_to,
    argMax(p.price_per_gpu_hour, p.updated_at)        AS price_per_gpu_hour,
    argMax(p.currency, p.updated_at)                  AS currency,
    argMax(p.note, p.updated_at)                      AS note,
    max(p.updated_at)                                 AS updated_at
FROM {{.DB}}.price_book AS p
GROUP BY p.card, p.effective_from
HAVING argMax(p.deleted, p.updated_at) = 0;

CREATE VIEW IF NOT EXISTS {{.DB}}.price_timeline {{.OnCluster}} AS
SELECT card, valid_from, valid_to, price_per_gpu_hour, currency
FROM (
    SELECT
        b.card                                        AS card,
        b.effective_from                              AS valid_from,
        least(ifNull(b.effective_to, toDateTime(4294967295, 'UTC')),
              leadInFrame(b.effective_from, 1, toDateTime(4294967295, 'UTC'))
                  OVER (PARTITION BY b.card ORDER BY b.effective_from ROWS BETWEEN CURRENT ROW AND 1 FOLLOWING)) AS valid_to,
        b.price_per_gpu_hour                          AS price_per_gpu_hour,
        b.currency                                    AS currency
    FROM {{.DB}}.price_book_current AS b
)
WHERE valid_to > valid_from;

CREATE VIEW IF NOT EXISTS {{.DB}}.chargeback_hourly_current {{.OnCluster}} AS
SELECT
    h.hour AS hour, h.gpu_uuid AS gpu_uuid, h.job AS job, h.cluster AS cluster, h.node AS node,
    h.card AS card, h.mig_profile AS mig_profile, h.gpu_weight AS gpu_weight,
    h.gpu_hours AS gpu_hours, h.used_gpu_hours AS used_gpu_hours, h.idle_gpu_hours AS idle_gpu_hours,
    h.unmeasured_gpu_hours AS unmeasured_gpu_hours, h.energy_kwh AS energy_kwh,
    h.sm_active_mean AS sm_active_mean, h.gr_engine_active_mean AS gr_engine_active_mean,
    h.queue_wait_hours AS queue_wait_hours
FROM {{.DB}}.chargeback_hourly AS h
WHERE (h.hour, h.generation) GLOBAL IN (
    SELECT r.hour, argMax(r.generation, r.refreshed_at) FROM {{.DB}}.chargeback_refreshes AS r GROUP BY r.hour
);

CREATE VIEW IF NOT EXISTS {{.DB}}.chargeback_jobs {{.OnCluster}} AS
SELECT
    j.job AS job, j.cluster AS cluster, j.team AS team, j.project AS project, j.queue AS queue,
    j.pool AS pool, j.model_name AS model_name, j.workload AS workload, j.source AS source,
    j.card AS requested_card, j.gpus AS requested_gpus,
    j.submit_time AS submit_time, j.start_time AS start_time, j.end_time AS end_time,
    j.state AS state, j.status AS status, j.attempt AS attempt, j.rerun_of AS rerun_of,
    toUInt8(j.status = 'failed' AND j.job IN (SELECT e.rerun_of FROM {{.DB}}.job_events AS e WHERE e.rerun_of != '')) AS failed_rerun,
    if(j.start_time IS NULL, NULL,
       greatest(dateDiff('millisecond', ifNull(j.submit_time, j.start_time), j.start_time), 0) / 3600000) AS queue_wait_hours
FROM {{.DB}}.jobs AS j;

CREATE VIEW IF NOT EXISTS {{.DB}}.chargeback_priced {{.OnCluster}} AS
SELECT
    h.hour AS hour, h.job AS job, h.gpu_uuid AS gpu_uuid, h.cluster AS cluster, h.node AS node,
    h.card AS card, h.mig_profile AS mig_profile, h.gpu_weight AS gpu_weight,
    j.team AS team, j.project AS project, j.pool AS pool, j.model_name AS model_name,
    j.status AS status, j.attempt AS attempt, j.failed_rerun AS failed_rerun,
    h.gpu_hours AS gpu_hours, h.used_gpu_hours AS used_gpu_hours, h.idle_gpu_hours AS idle_gpu_hours,
    h.unmeasured_gpu_hours AS unmeasured_gpu_hours, h.energy_kwh AS energy_kwh,
    h.queue_wait_hours AS queue_wait_hours, h.sm_active_mean AS sm_active_mean,
    h.gr_engine_active_mean AS gr_engine_active_mean,
    toUInt8(ifNull(p.valid_to > h.hour, 0)) AS priced,
    if(priced = 1, toFloat64(p.price_per_gpu_hour), NULL) AS price_per_gpu_hour,
    if(priced = 1, toString(p.currency), '') AS currency,
    h.gpu_hours * price_per_gpu_hour AS cost,
    h.idle_gpu_hours * price_per_gpu_hour AS idle_cost
FROM {{.DB}}.chargeback_hourly_current AS h
ASOF LEFT JOIN {{.DB}}.price_timeline AS p ON h.card = p.card AND h.hour >= p.valid_from
LEFT JOIN {{.DB}}.chargeback_jobs AS j ON h.job = j.job;

CREATE VIEW IF NOT EXISTS {{.DB}}.chargeback_daily {{.OnCluster}} AS
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
    sum(c.energy_kwh)                                 AS energy_kwh
FROM {{.DB}}.chargeback_priced AS c
WHERE c.job != ''
GROUP BY day, team, project, model_name, pool, card;

CREATE VIEW IF NOT EXISTS {{.DB}}.chargeback_monthly {{.OnCluster}} AS
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
    sum(c.energy_kwh)                                 AS energy_kwh
FROM {{.DB}}.chargeback_priced AS c
WHERE c.job != ''
GROUP BY month, team, project, model_name, pool, card;

CREATE VIEW IF NOT EXISTS {{.DB}}.idle_cost {{.OnCluster}} AS
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
    if(countIf(c.priced = 0) > 0 OR uniqExactIf(c.currency, c.priced = 1) > 1, NULL, sum(c.idle_cost)) AS idle_cost
FROM {{.DB}}.chargeback_priced AS c
WHERE c.job != ''
GROUP BY day, team, project, job, model_name, pool, card;

CREATE VIEW IF NOT EXISTS {{.DB}}.queue_wait {{.OnCluster}} AS
SELECT
    j.job                                             AS job,
    j.cluster                                         AS cluster,
    j.team                                            AS team,
    j.project                                         AS project,
    j.queue                                           AS queue,
    j.pool                                            AS pool,
    j.model_name                                      AS model_name,
    j.requested_card                                  AS requested_card,
    j.requested_gpus                                  AS requested_gpus,
    j.attempt                                         AS attempt,
    j.state                                           AS state,
    j.status                                          AS status,
    j.submit_time                                     AS submit_time,
    j.start_time                                      AS start_time,
    ifNull(j.queue_wait_hours,
           greatest(dateDiff('millisecond', assumeNotNull(j.submit_time), ifNull(j.end_time, now64(3))), 0) / 3600000) AS queue_wait_hours,
    queue_wait_hours * j.requested_gpus               AS queued_gpu_hours
FROM {{.DB}}.chargeback_jobs AS j
WHERE j.submit_time IS NOT NULL;

CREATE VIEW IF NOT EXISTS {{.DB}}.unallocated_capacity {{.OnCluster}} AS
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
FROM {{.DB}}.chargeback_priced AS c
GROUP BY day, cluster, card;

CREATE VIEW IF NOT EXISTS {{.DB}}.unallocated_by_team {{.OnCluster}} AS
SELECT
    t.day                                             AS day,
    t.cluster                                         AS cluster,
    t.card                                            AS card,
    t.team                                            AS team,
    u.currency                                        AS currency,
    t.team_gpu_hours                                  AS team_allocated_gpu_hours,
    t.team_gpu_hours / u.allocated_gpu_hours          AS use_share,
    u.unallocated_gpu_hours * use_share               AS spread_gpu_hours,
    u.unallocated_cost * use_share                    AS spread_cost
FROM (
    SELECT toDate(c.hour) AS day, c.cluster AS cluster, c.card AS card, c.team AS team, sum(c.gpu_hours) AS team_gpu_hours
    FROM {{.DB}}.chargeback_priced AS c
    WHERE c.job != ''
    GROUP BY day, cluster, card, team
) AS t
INNER JOIN {{.DB}}.unallocated_capacity AS u ON u.day = t.day AND u.cluster = t.cluster AND u.card = t.card
WHERE u.allocated_gpu_hours > 0;

CREATE VIEW IF NOT EXISTS {{.DB}}.utilisation_distribution {{.OnCluster}} AS
SELECT
    toStartOfMonth(c.hour)                            AS month,
    d.1                                               AS dimension,
    d.2                                               AS key,
    sum(c.gpu_hours)                                  AS gpu_hours,
    quantileExactWeighted(0.5)(c.sm_active_mean, toUInt64(round(c.gpu_hours * 3600000)))          AS sm_active_p50,
    quantileExactWeighted(0.95)(c.sm_active_mean, toUInt64(round(c.gpu_hours * 3600000)))         AS sm_active_p95,
    quantileExactWeighted(0.5)(c.gr_engine_active_mean, toUInt64(round(c.gpu_hours * 3600000)))   AS gr_engine_active_p50,
    quantileExactWeighted(0.95)(c.gr_engine_active_mean, toUInt64(round(c.gpu_hours * 3600000)))  AS gr_engine_active_p95
FROM {{.DB}}.chargeback_priced AS c
ARRAY JOIN [('job', c.job), ('team', c.team), ('card', toString(c.card)), ('hour_of_day', toString(toHour(c.hour)))] AS d
WHERE c.job != ''
GROUP BY month, dimension, key;

CREATE VIEW IF NOT EXISTS {{.DB}}.capacity {{.OnCluster}} AS
SELECT
    x.hour                                            AS hour,
    x.card                                            AS card,
    sum(x.cap)                                        AS capacity_gpus,
    sum(x.run)                                        AS running_gpus,
    sum(x.act)                                        AS active_gpus,
    sum(x.queued)                                     AS queued_gpus,
    running_gpus + queued_gpus                        AS demand_gpus,
    greatest(capacity_gpus - running_gpus, 0)         AS free_gpus
FROM (
    SELECT h.hour AS hour, toString(h.card) AS card, h.gpu_hours AS cap,
           if(h.job != '', h.gpu_hours, 0) AS run, if(h.job != '', h.used_gpu_hours, 0) AS act, 0 AS queued
    FROM {{.DB}}.chargeback_hourly_current AS h
    UNION ALL
    SELECT q.hour AS hour, q.card AS card, 0 AS cap, 0 AS run, 0 AS act,
           q.gpus * greatest(least(q.q_to, q.hour_ms + 3600000) - greatest(q.q_from, q.hour_ms), 0) / 3600000 AS queued
    FROM (
        SELECT toString(j.requested_card) AS card, j.requested_gpus AS gpus,
               toUnixTimestamp64Milli(assumeNotNull(j.submit_time)) AS q_from,
               toUnixTimestamp64Milli(coalesce(j.start_time, j.end_time, now64(3))) AS q_to,
               arrayJoin(range(intDiv(toUInt64(q_from), 3600000) * 3600000, toUInt64(greatest(q_to, q_from)), 3600000)) AS hour_ms,
               toDateTime(intDiv(hour_ms, 1000), 'UTC') AS hour
        FROM {{.DB}}.chargeback_jobs AS j
        WHERE j.submit_time IS NOT NULL
    ) AS q
) AS x
GROUP BY hour, card;

CREATE VIEW IF NOT EXISTS {{.DB}}.gpu_daily {{.OnCluster}} AS
SELECT
    toDate(h.hour)                                    AS day,
    h.cluster                                         AS cluster,
    h.node                                            AS node,
    h.gpu_uuid                                        AS gpu_uuid,
    h.card                                            AS card,
    h.mig_profile                                     AS mig_profile,
    sum(h.gpu_hours)                                  AS capacity_gpu_hours,
    sumIf(h.gpu_hours, h.job != '')                   AS allocated_gpu_hours,
    sum(h.used_gpu_hours)                             AS active_gpu_hours,
    sumIf(h.used_gpu_hours, h.job = '')               AS unallocated_active_gpu_hours,
    uniqExactIf(h.job, h.job != '')                   AS jobs
FROM {{.DB}}.chargeback_hourly_current AS h
GROUP BY day, cluster, node, gpu_uuid, card, mig_profile;
