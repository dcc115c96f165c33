-- 0002: job events and the jobs view.
--
-- Producers report what they know when they know it: the team at submit, the GPUs at
-- start, the exit code at end. job_events keeps every event as it came; `jobs` merges
-- them into one row per job attempt. The merge uses only min/max/argMax, which a
-- repeated event cannot change, so a redelivered event never alters a job. A view
-- (rather than a ReplacingMergeTree the producers would have to fill with the whole
-- job each time) needs no FINAL and is exact at every moment; job events are few
-- (a handful per job), so grouping them at query time is cheap.
--
-- Job events have no TTL: chargeback for past months needs them.

CREATE TABLE IF NOT EXISTS {{.DB}}.{{.Local "job_events"}} {{.OnCluster}}
(
    ts         DateTime64(3, 'UTC'),
    job        String COMMENT 'job key, unique per attempt',
    event      LowCardinality(String) COMMENT 'submit, admit, start, end, preempt, requeue',
    source     LowCardinality(String) COMMENT 'kubernetes, slurm, process, scheduler',
    cluster    LowCardinality(String),
    team       LowCardinality(String),
    project    LowCardinality(String),
    queue      LowCardinality(String),
    pool       LowCardinality(String),
    model_name LowCardinality(String),
    workload   LowCardinality(String),
    gpus       UInt32 COMMENT 'GPUs requested',
    card       LowCardinality(String) COMMENT 'card type requested; empty for any',
    nodes      Array(LowCardinality(String)),
    gpu_uuids  Array(String),
    status     LowCardinality(String) COMMENT 'on end: succeeded, failed, cancelled, preempted',
    exit_code  Int32,
    attempt    UInt32,
    rerun_of   String,
    labels     Map(LowCardinality(String), String)
)
ENGINE = {{.Engine "MergeTree"}}
PARTITION BY toYYYYMM(ts)
ORDER BY (job, ts, event)
SETTINGS {{.DedupWindow 10000}};

{{.Distributed "job_events" "cityHash64(job)"}};

-- The view jobs this migration (re)defined is now schemas/views/jobs.sql, re-applied on every migrate.
