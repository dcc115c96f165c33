-- 0026: the last hours of gpu_samples, sorted by time (issue 42).
--
-- The console's fleet page asks each GPU's state over the last five minutes.
-- gpu_samples is sorted by (cluster, node, gpu_uuid, ts) and partitioned by day,
-- so that question read the whole day's samples of every GPU: measured with
-- 10,000 GPUs at 10 s, 161 ms after an hour of the day and 358 ms after four,
-- growing through the day (a day at 1 Hz is 864 M rows). This table holds the same
-- rows for a few hours, sorted by time first, so the question reads the window's
-- rows and few others; gpu_state_recent reads it.
--
-- * Columns, codecs and types are gpu_samples' own (CREATE … AS): ingest inserts
--   the batch's gpu_samples block into both tables, each with its own
--   deduplication token (exactly once, as for the rollups). A column added to
--   gpu_samples later must be added here too.
-- * ORDER BY (five-minute block of ts, gpu_uuid, ts): a window reads its blocks
--   only, and within a block each GPU's samples lie together, so the per-GPU
--   aggregation runs along them (sorted by ts alone, the same question over the
--   same rows took 2.7 times as long, 21,256 GPU units at 1 Hz).
-- * PARTITION BY hour; the TTL drops whole hour-parts three hours after their last
--   sample (ttl_only_drop_parts), checked every half hour: the table holds between
--   three and about five hours.
-- * The TTL is the server's wall clock: samples older than three hours when they
--   arrive (a replayed trace, a backfill) are dropped from here at the next check
--   and stay in gpu_samples; readers of older windows read gpu_samples
--   (gpu_state_between).
-- * On a cluster, rows are sharded by node, as gpu_samples'.
-- * The migration copies gpu_samples' last three hours in, so the fleet page
--   reads no gap after an upgrade (run again, it skips the rows it copied).

CREATE TABLE IF NOT EXISTS {{.DB}}.{{.Local "gpu_samples_recent"}} {{.OnCluster}}
AS {{.DB}}.{{.Local "gpu_samples"}}
ENGINE = {{.Engine "MergeTree"}}
PARTITION BY toStartOfHour(ts)
ORDER BY (toStartOfFiveMinutes(ts), gpu_uuid, ts)
TTL toDateTime(ts) + INTERVAL 3 HOUR
SETTINGS {{.DedupWindow 10000}}, ttl_only_drop_parts = 1, merge_with_ttl_timeout = 1800;

{{.Distributed "gpu_samples_recent" "cityHash64(node)"}};

INSERT INTO {{.DB}}.gpu_samples_recent
SELECT * FROM {{.DB}}.gpu_samples AS g
WHERE g.ts >= now() - INTERVAL 3 HOUR
  AND (g.node, g.gpu_uuid, g.ts) GLOBAL NOT IN (SELECT DISTINCT r.node, r.gpu_uuid, r.ts FROM {{.DB}}.gpu_samples_recent AS r);
