-- 0020: ingest writes process_minute itself; the materialized view is dropped.
--
-- process_minute_mv rolled every insert into process_samples up per (GPU, job,
-- minute) on the inserting thread: a GROUP BY over every row that cost the engine
-- as much as a third of the insert (ingest drained 1.33–1.57 M rows/s with it,
-- 1.84–1.96 without, alternating; docs/measurements.md, Ingest throughput).
-- Ingest now computes the same rows from the columns it already holds (Go, a pass
-- over the batch keyed by dictionary index; ingest/rollup.go) and inserts them with
-- the batch, under the batch's own deduplication token for process_minute, so a
-- redelivered or recovered batch adds nothing twice. The columns, their meaning and
-- the table are unchanged, and so are the rows already written.
--
-- Upgrading: run this with the new ingest (every service checks the schema at start,
-- and a new ingest refuses an older schema, so it never writes a rollup the view
-- also writes). An older ingest still running after this migration inserts samples
-- without their process_minute rows; stop it first, or rebuild the hours it wrote
-- with the INSERT … SELECT of migration 0013's view query over process_samples.
-- Running this again changes nothing.

DROP VIEW IF EXISTS {{.DB}}.process_minute_mv {{.OnCluster}};
