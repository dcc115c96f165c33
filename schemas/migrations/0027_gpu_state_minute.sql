-- 0027: the fleet's state now from a per-minute rollup of the last hours, in place
-- of gpu_samples_recent (issue 42).
--
-- The console's fleet page asks each GPU's state over the last five minutes. Since
-- 0026 it read gpu_samples_recent, the raw samples of the last hours sorted by
-- time: the window's samples only, but at 1 Hz that is 300 rows per GPU. With
-- 21,256 GPU units (10,000 GPUs and their MIG slices) the question read 6.4 M rows
-- and took 550–700 ms on an idle machine, most of the page's time, and seconds
-- beside ingest and the analyzer. This table holds what the question needs per GPU
-- and minute, so five minutes are five rows per GPU however often GPUs are sampled.
--
-- * Ingest writes it (ingest/state_minute.go), as it writes gpu_minute: each
--   batch's GPU samples rolled up per (GPU, minute) under the batch's own
--   deduplication token for this table, so a redelivered or recovered batch adds
--   nothing twice. Rows of one key from several batches merge in the background
--   (AggregatingMergeTree); readers group again (gpu_state_recent).
-- * Per minute: any gpu_index and model, the greatest driver version, framebuffer
--   total, memory used and temperature, the sum and count of the activity
--   (coalesce(sm_active, gr_engine_active, gpu_util)) and of the power, the highest
--   XID and the latest sample's time. The views gpu_state_recent (this table) and
--   gpu_state_between (gpu_samples, the same per-minute figures computed from the
--   raw samples) answer alike: the memory and temperature shown are the most in a
--   GPU's latest minute, no longer those of its single latest sample.
-- * ORDER BY (minute, gpu_uuid): a window reads its minutes only.
-- * PARTITION BY hour; the TTL drops whole hour-parts three hours after their last
--   minute (ttl_only_drop_parts), checked every half hour, as gpu_samples_recent's
--   did. Minutes older than three hours when they arrive (a replayed trace, a
--   backfill) are dropped from here at the next check and stay in gpu_samples.
-- * gpu_samples_recent is dropped: nothing reads it now, and ingest no longer
--   writes every GPU sample twice.
-- * The migration rolls gpu_samples' last three hours up into the table, so the
--   fleet page reads no gap after an upgrade (run again, it skips the minutes it
--   holds). Upgrading: stop the older ingest (it writes gpu_samples_recent), run
--   this, start the new one.

CREATE TABLE IF NOT EXISTS {{.DB}}.{{.Local "gpu_state_minute"}} {{.OnCluster}}
(
    minute           DateTime('UTC') CODEC(DoubleDelta, ZSTD(1)),
    gpu_uuid         LowCardinality(String),
    gpu_index        SimpleAggregateFunction(any, UInt16),
    model            SimpleAggregateFunction(any, LowCardinality(String)),
    driver_version   SimpleAggregateFunction(max, LowCardinality(String)),
    fb_total_mib     SimpleAggregateFunction(max, UInt32),
    fb_used_mib_max  SimpleAggregateFunction(max, UInt32) COMMENT 'most memory used in the minute, MiB',
    activity_sum     SimpleAggregateFunction(sum, Float64) COMMENT 'sum of coalesce(sm_active, gr_engine_active, gpu_util)',
    activity_samples SimpleAggregateFunction(sum, UInt64),
    power_w_sum      SimpleAggregateFunction(sum, Float64),
    power_samples    SimpleAggregateFunction(sum, UInt64),
    temp_c_max       SimpleAggregateFunction(max, Nullable(Float32)),
    xid_max          SimpleAggregateFunction(max, UInt32),
    last_ts          SimpleAggregateFunction(max, DateTime64(3, 'UTC')) COMMENT 'the minute''s latest sample'
)
ENGINE = {{.Engine "AggregatingMergeTree"}}
PARTITION BY toStartOfHour(minute)
ORDER BY (minute, gpu_uuid)
TTL minute + INTERVAL 3 HOUR
SETTINGS {{.DedupWindow 10000}}, ttl_only_drop_parts = 1, merge_with_ttl_timeout = 1800;

{{.Distributed "gpu_state_minute" "cityHash64(gpu_uuid)"}};

INSERT INTO {{.DB}}.gpu_state_minute
SELECT toStartOfMinute(ts) AS minute, gpu_uuid, any(gpu_index), any(model), max(driver_version),
    max(fb_total_mib), max(fb_used_mib), sum(ifNull(coalesce(sm_active, gr_engine_active, gpu_util), 0)),
    count(coalesce(sm_active, gr_engine_active, gpu_util)), sum(ifNull(power_w, 0)), count(power_w),
    max(temp_c), max(xid), max(ts)
FROM {{.DB}}.gpu_samples
WHERE ts >= toStartOfMinute(now() - INTERVAL 3 HOUR)
  AND (gpu_uuid, toStartOfMinute(ts)) GLOBAL NOT IN (SELECT DISTINCT gpu_uuid, minute FROM {{.DB}}.gpu_state_minute)
GROUP BY minute, gpu_uuid;

DROP TABLE IF EXISTS {{.DB}}.gpu_samples_recent {{.OnCluster}} SYNC;

DROP TABLE IF EXISTS {{.DB}}.{{.Local "gpu_samples_recent"}} {{.OnCluster}} SYNC;
