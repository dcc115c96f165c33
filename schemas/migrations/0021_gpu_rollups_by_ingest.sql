-- 0021: ingest writes gpu_minute and gpu_hour itself; their materialized views are
-- dropped.
--
-- gpu_minute_mv and gpu_hour_mv rolled every insert into gpu_samples up per (GPU,
-- minute) and per (GPU, hour) on the inserting thread, as process_minute_mv did
-- until migration 0020: beside the process samples' insert on the same two cores,
-- the engine took 74–299 ms to insert a batch's 8,000 GPU rows with the two views,
-- 15–130 ms with them dropped (a diagnosis, 4 alternating runs; docs/measurements.md,
-- Ingest throughput). Ingest now computes the same rows from the columns it already
-- holds (ingest/rollup.go, gpuRollup) and inserts them with the batch, each under
-- the batch's own deduplication token for its table, so a redelivered or recovered
-- batch adds nothing twice. The columns, their meaning, the activity thresholds and
-- the tables are unchanged, and so are the rows already written.
--
-- Upgrading: as for 0020. Stop the older ingest (it commits the batch in hand), run
-- this, start the new one; every service checks the schema at start. A batch an
-- older ingest left uncommitted that the new one recovers is rolled up again, and
-- samples loaded into gpu_samples by hand (a backfill) get no rollup rows: roll such
-- hours up with ingest.RollUpLoaded, the views' queries of migration 0003 over
-- gpu_samples (schemas.ViewQuery gives them). Running this again changes nothing.

DROP VIEW IF EXISTS {{.DB}}.gpu_minute_mv {{.OnCluster}};

DROP VIEW IF EXISTS {{.DB}}.gpu_hour_mv {{.OnCluster}};
