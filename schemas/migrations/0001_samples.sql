-- 0001: raw samples, one row per GPU per tick and per process per GPU per tick.
--
-- Choices that hold for both tables:
-- * PARTITION BY day: the TTL drops whole day-parts (ttl_only_drop_parts) instead of
--   rewriting them, and queries over a period prune to its days. A day per partition
--   keeps the part count low (a month is ~30 partitions) at any fleet size.
-- * ORDER BY (cluster, node, gpu_uuid, ...ts): the analyzer reads per-GPU and
--   per-process time series, and neighbouring rows of one series compress best.
-- * LowCardinality for names repeated on every row (cluster, node, GPU, model, job):
--   dictionary-encoded, compared as integers.
-- * ts uses DoubleDelta: ticks are evenly spaced within a series, so the second
--   difference is almost always 0. Counters (energy) use Delta; small integers T64;
--   slowly moving ratios Gorilla; everything then ZSTD(1).
-- * Optional measurements are Nullable: NULL means "the source did not report it"
--   (an NVML-only node has no profiling fields), so averages and quantiles skip it
--   instead of counting a fake zero.
-- * non_replicated_deduplication_window: ingest gives every insert a deduplication
--   token derived from the NATS messages in it; ClickHouse keeps the last N tokens
--   per table and drops a repeated insert. 10000 inserts is hours of ingest at the
--   recommended one insert per second per table (see README, "Exactly once").
-- * On a ClickHouse cluster (store.clickhouse.cluster) each table is <name>_local,
--   Replicated, on every server, and <name> is a Distributed table over them,
--   sharded by node so that one node's series stay on one shard.
-- * TTL: raw samples are kept {{.RawTTLDays}} days; rollups (later migrations) keep
--   their aggregates without a TTL.

CREATE DATABASE IF NOT EXISTS {{.DB}} {{.OnCluster}};

CREATE TABLE IF NOT EXISTS {{.DB}}.{{.Local "gpu_samples"}} {{.OnCluster}}
(
    ts                  DateTime64(3, 'UTC') CODEC(DoubleDelta, ZSTD(1)),
    cluster             LowCardinality(String),
    node                LowCardinality(String),
    gpu_uuid            LowCardinality(String) COMMENT 'GPU-… or MIG-… for a MIG instance',
    gpu_index           UInt16 CODEC(T64, ZSTD(1)),
    model               LowCardinality(String) COMMENT 'card model as the driver names it',
    card                LowCardinality(String) COMMENT 'card type for pricing, e.g. H100-80GB',
    mig_profile         LowCardinality(String) COMMENT 'e.g. 1g.10gb; empty for a whole GPU',
    fb_total_mib        UInt32 CODEC(T64, ZSTD(1)),
    fb_used_mib         UInt32 CODEC(T64, ZSTD(1)),
    gr_engine_active    Nullable(Float32) COMMENT 'ratio 0..1, DCGM_FI_PROF_GR_ENGINE_ACTIVE' CODEC(Gorilla, ZSTD(1)),
    sm_active           Nullable(Float32) COMMENT 'ratio 0..1, DCGM_FI_PROF_SM_ACTIVE' CODEC(Gorilla, ZSTD(1)),
    sm_occupancy        Nullable(Float32) COMMENT 'ratio 0..1, DCGM_FI_PROF_SM_OCCUPANCY' CODEC(Gorilla, ZSTD(1)),
    tensor_active       Nullable(Float32) COMMENT 'ratio 0..1, DCGM_FI_PROF_PIPE_TENSOR_ACTIVE' CODEC(Gorilla, ZSTD(1)),
    dram_active         Nullable(Float32) COMMENT 'ratio 0..1, DCGM_FI_PROF_DRAM_ACTIVE' CODEC(Gorilla, ZSTD(1)),
    gpu_util            Nullable(Float32) COMMENT 'ratio 0..1, DCGM_FI_DEV_GPU_UTIL / NVML' CODEC(Gorilla, ZSTD(1)),
    pcie_tx_bytes_per_s Nullable(Float32) CODEC(ZSTD(1)),
    pcie_rx_bytes_per_s Nullable(Float32) CODEC(ZSTD(1)),
    power_w             Nullable(Float32) CODEC(Gorilla, ZSTD(1)),
    energy_mj           UInt64 COMMENT 'energy counter, millijoules' CODEC(Delta, ZSTD(1)),
    temp_c              Nullable(Float32) CODEC(Gorilla, ZSTD(1)),
    xid                 UInt32 COMMENT 'last XID error in the tick, 0 if none' CODEC(T64, ZSTD(1)),
    clock_event_reasons UInt64 CODEC(T64, ZSTD(1))
)
ENGINE = {{.Engine "MergeTree"}}
PARTITION BY toYYYYMMDD(ts)
ORDER BY (cluster, node, gpu_uuid, ts)
TTL toDateTime(ts) + INTERVAL {{.RawTTLDays}} DAY
SETTINGS {{.DedupWindow 10000}}, ttl_only_drop_parts = 1;

CREATE TABLE IF NOT EXISTS {{.DB}}.{{.Local "process_samples"}} {{.OnCluster}}
(
    ts           DateTime64(3, 'UTC') CODEC(DoubleDelta, ZSTD(1)),
    cluster      LowCardinality(String),
    node         LowCardinality(String),
    gpu_uuid     LowCardinality(String),
    pid          UInt32 CODEC(T64, ZSTD(1)),
    process_name LowCardinality(String),
    job          LowCardinality(String) COMMENT 'job key; empty when the process could not be attributed',
    fb_used_mib  UInt32 COMMENT 'GPU memory this process holds' CODEC(T64, ZSTD(1)),
    sm_util      Nullable(Float32) COMMENT 'share of SM time, 0..1' CODEC(Gorilla, ZSTD(1)),
    mem_util     Nullable(Float32) COMMENT 'share of memory bandwidth, 0..1' CODEC(Gorilla, ZSTD(1))
)
ENGINE = {{.Engine "MergeTree"}}
PARTITION BY toYYYYMMDD(ts)
ORDER BY (cluster, node, gpu_uuid, pid, ts)
TTL toDateTime(ts) + INTERVAL {{.RawTTLDays}} DAY
SETTINGS {{.DedupWindow 10000}}, ttl_only_drop_parts = 1;

{{.Distributed "gpu_samples" "cityHash64(node)"}};

{{.Distributed "process_samples" "cityHash64(node)"}};
