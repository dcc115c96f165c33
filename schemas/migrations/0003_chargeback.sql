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

-- The view price_book_current this migration (re)defined is now schemas/views/price_book_current.sql, re-applied on every migrate.

-- The view price_timeline this migration (re)defined is now schemas/views/price_timeline.sql, re-applied on every migrate.

-- The view chargeback_hourly_current this migration (re)defined is now schemas/views/chargeback_hourly_current.sql, re-applied on every migrate.

-- The view chargeback_jobs this migration (re)defined is now schemas/views/chargeback_jobs.sql, re-applied on every migrate.

-- The view chargeback_priced this migration (re)defined is now schemas/views/chargeback_priced.sql, re-applied on every migrate.

-- The view chargeback_daily this migration (re)defined is now schemas/views/chargeback_daily.sql, re-applied on every migrate.

-- The view chargeback_monthly this migration (re)defined is now schemas/views/chargeback_monthly.sql, re-applied on every migrate.

-- The view idle_cost this migration (re)defined is now schemas/views/idle_cost.sql, re-applied on every migrate.

-- The view queue_wait this migration (re)defined is now schemas/views/queue_wait.sql, re-applied on every migrate.

-- The view unallocated_capacity this migration (re)defined is now schemas/views/unallocated_capacity.sql, re-applied on every migrate.

-- The view unallocated_by_team this migration (re)defined is now schemas/views/unallocated_by_team.sql, re-applied on every migrate.

-- The view utilisation_distribution this migration (re)defined is now schemas/views/utilisation_distribution.sql, re-applied on every migrate.

-- The view capacity this migration (re)defined is now schemas/views/capacity.sql, re-applied on every migrate.

-- The view gpu_daily this migration (re)defined is now schemas/views/gpu_daily.sql, re-applied on every migrate.
