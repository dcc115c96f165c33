-- 0007: codecs chosen from measurement (BenchmarkBytesPerValue, docs/measurements.md).
--
-- Measured per column after OPTIMIZE … FINAL on a simulated day and on the same day
-- with realistic measurement noise:
-- * Ingest rounds measurements to their stored precision (schemas/precision.go:
--   ratios to 1/512, power to 1/4 W, temperature to 1 °C, byte rates to 7 bits of
--   mantissa). A rounded Float32 has zero low mantissa bits, which ZSTD alone
--   packs better than Gorilla does (a noisy ratio: 2.1 bytes with Gorilla+ZSTD(1)
--   unrounded; rounded to 1/1024, 1.0 with Gorilla, 0.9 with ZSTD(3), 0.84 with
--   ZSTD(9); rounded to 1/512, 0.74 with ZSTD(9)); so floats lose Gorilla.
-- * ZSTD levels: gpu_samples takes ZSTD(9) (one GPU row per GPU per tick, against
--   a process row per process: the fewer rows, the cheaper the level); the
--   process_samples ratios, on ingest's busiest table, keep ZSTD(3).
-- * The energy counter: Delta then T64 (the deltas fit in a few bytes) then ZSTD:
--   2.4 bytes a row against 2.7 with Delta+ZSTD(1) and 3.3 with DoubleDelta (the
--   increments are power × tick: noisy, so the second difference is not small).
-- * Rollups: their counts and sums had no codec (plain LZ4); counts take T64, the
--   energy minimum and maximum Delta+T64 like the counter, and the sums (exact, as
--   sums of rounded values) ZSTD(9): a noisy minute's activity sum 1.2 bytes
--   against 2.6. The rollups take few rows per insert, so the level costs ingest
--   little.
-- * The sort keys stay: the raw tables are ordered by (cluster, node, gpu_uuid, …,
--   ts) and the rollups by (gpu_uuid, …, minute|hour), so a series' rows are
--   neighbours already.
-- Only new parts are written with the new codecs; old parts take them when they
-- merge (OPTIMIZE TABLE … FINAL rewrites a table at once). MODIFY COLUMN … CODEC
-- changes nothing else of the column (type, default and comment stay), and running
-- it again changes nothing.

ALTER TABLE {{.DB}}.{{.Local "gpu_samples"}} {{.OnCluster}}
    MODIFY COLUMN IF EXISTS fb_used_mib CODEC(T64, ZSTD(3)),
    MODIFY COLUMN IF EXISTS gr_engine_active CODEC(ZSTD(9)),
    MODIFY COLUMN IF EXISTS sm_active CODEC(ZSTD(9)),
    MODIFY COLUMN IF EXISTS sm_occupancy CODEC(ZSTD(9)),
    MODIFY COLUMN IF EXISTS tensor_active CODEC(ZSTD(9)),
    MODIFY COLUMN IF EXISTS dram_active CODEC(ZSTD(9)),
    MODIFY COLUMN IF EXISTS gpu_util CODEC(ZSTD(9)),
    MODIFY COLUMN IF EXISTS pcie_tx_bytes_per_s CODEC(ZSTD(9)),
    MODIFY COLUMN IF EXISTS pcie_rx_bytes_per_s CODEC(ZSTD(9)),
    MODIFY COLUMN IF EXISTS power_w CODEC(ZSTD(9)),
    MODIFY COLUMN IF EXISTS energy_mj CODEC(Delta, T64, ZSTD(9)),
    MODIFY COLUMN IF EXISTS temp_c CODEC(ZSTD(9));

ALTER TABLE {{.DB}}.{{.Local "process_samples"}} {{.OnCluster}}
    MODIFY COLUMN IF EXISTS sm_util CODEC(ZSTD(3)),
    MODIFY COLUMN IF EXISTS mem_util CODEC(ZSTD(3));

ALTER TABLE {{.DB}}.{{.Local "gpu_minute"}} {{.OnCluster}}
    MODIFY COLUMN IF EXISTS samples CODEC(T64, ZSTD(1)),
    MODIFY COLUMN IF EXISTS activity_samples CODEC(T64, ZSTD(1)),
    MODIFY COLUMN IF EXISTS active_samples CODEC(T64, ZSTD(1)),
    MODIFY COLUMN IF EXISTS gr_engine_active_samples CODEC(T64, ZSTD(1)),
    MODIFY COLUMN IF EXISTS sm_active_samples CODEC(T64, ZSTD(1)),
    MODIFY COLUMN IF EXISTS tensor_active_samples CODEC(T64, ZSTD(1)),
    MODIFY COLUMN IF EXISTS dram_active_samples CODEC(T64, ZSTD(1)),
    MODIFY COLUMN IF EXISTS power_samples CODEC(T64, ZSTD(1)),
    MODIFY COLUMN IF EXISTS xid_samples CODEC(T64, ZSTD(1)),
    MODIFY COLUMN IF EXISTS fb_used_mib_max CODEC(T64, ZSTD(9)),
    MODIFY COLUMN IF EXISTS fb_used_mib_sum CODEC(T64, ZSTD(9)),
    MODIFY COLUMN IF EXISTS gr_engine_active_sum CODEC(ZSTD(9)),
    MODIFY COLUMN IF EXISTS sm_active_sum CODEC(ZSTD(9)),
    MODIFY COLUMN IF EXISTS tensor_active_sum CODEC(ZSTD(9)),
    MODIFY COLUMN IF EXISTS dram_active_sum CODEC(ZSTD(9)),
    MODIFY COLUMN IF EXISTS power_w_sum CODEC(ZSTD(9)),
    MODIFY COLUMN IF EXISTS energy_mj_min CODEC(Delta, T64, ZSTD(9)),
    MODIFY COLUMN IF EXISTS energy_mj_max CODEC(Delta, T64, ZSTD(9));

ALTER TABLE {{.DB}}.{{.Local "gpu_hour"}} {{.OnCluster}}
    MODIFY COLUMN IF EXISTS samples CODEC(T64, ZSTD(1)),
    MODIFY COLUMN IF EXISTS activity_samples CODEC(T64, ZSTD(1)),
    MODIFY COLUMN IF EXISTS active_samples CODEC(T64, ZSTD(1)),
    MODIFY COLUMN IF EXISTS gr_engine_active_samples CODEC(T64, ZSTD(1)),
    MODIFY COLUMN IF EXISTS sm_active_samples CODEC(T64, ZSTD(1)),
    MODIFY COLUMN IF EXISTS tensor_active_samples CODEC(T64, ZSTD(1)),
    MODIFY COLUMN IF EXISTS dram_active_samples CODEC(T64, ZSTD(1)),
    MODIFY COLUMN IF EXISTS power_samples CODEC(T64, ZSTD(1)),
    MODIFY COLUMN IF EXISTS xid_samples CODEC(T64, ZSTD(1)),
    MODIFY COLUMN IF EXISTS fb_used_mib_max CODEC(T64, ZSTD(9)),
    MODIFY COLUMN IF EXISTS fb_used_mib_sum CODEC(T64, ZSTD(9)),
    MODIFY COLUMN IF EXISTS gr_engine_active_sum CODEC(ZSTD(9)),
    MODIFY COLUMN IF EXISTS sm_active_sum CODEC(ZSTD(9)),
    MODIFY COLUMN IF EXISTS tensor_active_sum CODEC(ZSTD(9)),
    MODIFY COLUMN IF EXISTS dram_active_sum CODEC(ZSTD(9)),
    MODIFY COLUMN IF EXISTS power_w_sum CODEC(ZSTD(9)),
    MODIFY COLUMN IF EXISTS energy_mj_min CODEC(Delta, T64, ZSTD(9)),
    MODIFY COLUMN IF EXISTS energy_mj_max CODEC(Delta, T64, ZSTD(9));

ALTER TABLE {{.DB}}.{{.Local "process_minute"}} {{.OnCluster}}
    MODIFY COLUMN IF EXISTS samples CODEC(T64, ZSTD(1)),
    MODIFY COLUMN IF EXISTS fb_used_mib_sum CODEC(T64, ZSTD(9)),
    MODIFY COLUMN IF EXISTS fb_used_mib_max CODEC(T64, ZSTD(9)),
    MODIFY COLUMN IF EXISTS sm_util_samples CODEC(T64, ZSTD(1)),
    MODIFY COLUMN IF EXISTS mem_util_samples CODEC(T64, ZSTD(1)),
    MODIFY COLUMN IF EXISTS sm_util_sum CODEC(ZSTD(9)),
    MODIFY COLUMN IF EXISTS mem_util_sum CODEC(ZSTD(9));
