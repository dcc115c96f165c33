-- 0022: process_minute counts the sample times a job held each GPU.
--
-- GPU-hours per job (the Jobs page's, a team's per day, bench/peers' comparison
-- with Prometheus) are the distinct (GPU, sample time) pairs at which the job had a
-- process on the GPU, times the collector's interval. process_minute's samples
-- count process samples (a job with four processes on a GPU counts four per tick),
-- so until now that figure came from process_samples, every raw row of the window
-- read and grouped. sample_times is, per (GPU, job, minute), the distinct sample
-- times among the key's process samples (per node: a GPU reports from one): the
-- figure from the rollup, one row per key and minute. Ingest computes it with the
-- rest of the row (ingest/rollup.go); ingest.RollUpLoaded computes it for a
-- backfill as uniqExact(node, ts). Rows written before this migration have 0: read
-- GPU-hours for those minutes from process_samples, or roll them up again. Running
-- this again changes nothing.

ALTER TABLE {{.DB}}.{{.Local "process_minute"}} {{.OnCluster}}
    ADD COLUMN IF NOT EXISTS sample_times SimpleAggregateFunction(sum, UInt64) DEFAULT 0 COMMENT 'distinct sample times at which the job had a process on the GPU (times the interval: GPU-time held)' CODEC(T64, ZSTD(1));

{{if .Cluster}}ALTER TABLE {{.DB}}.process_minute {{.OnCluster}}
    ADD COLUMN IF NOT EXISTS sample_times SimpleAggregateFunction(sum, UInt64) DEFAULT 0;{{end}}
