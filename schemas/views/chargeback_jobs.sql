-- Job attempts with their labels, as the views join them.
--
-- | column | type | meaning |
-- | --- | --- | --- |
-- | `job` | String | job attempt key |
-- | `cluster` | String | cluster |
-- | `team` | String | team |
-- | `project` | String | project |
-- | `queue` | String | queue |
-- | `pool` | String | pool |
-- | `model_name` | String | model |
-- | `workload` | String | training, inference, batch-inference, dev, other |
-- | `source` | String | kubernetes, slurm, process, scheduler |
-- | `requested_card` | String | card type asked for |
-- | `requested_gpus` | UInt32 | GPUs asked for |
-- | `submit_time` | Nullable(DateTime64(3, 'UTC')) | submitted |
-- | `start_time` | Nullable(DateTime64(3, 'UTC')) | started |
-- | `end_time` | Nullable(DateTime64(3, 'UTC')) | ended or preempted |
-- | `state` | String | queued, running or ended |
-- | `status` | String | how it ended |
-- | `attempt` | UInt32 | attempt number |
-- | `rerun_of` | String | the failed attempt this one reruns |
-- | `failed_rerun` | UInt8 | 1 if this attempt failed and another reruns it |
-- | `queue_wait_hours` | Nullable(Float64) | submit to start, hours; NULL until it starts |
-- | `requested_mig_profile` | String | MIG profile asked for (a job of MIG instances; `requested_gpus` is then 0) |
-- | `requested_mig_instances` | UInt32 | MIG instances of that profile asked for |
-- | `requested_gpu_fraction` | UInt32 | share of one GPU asked for, in thousandths (`requested_gpus` is then 0) |
-- | `requested_sharing` | String | that share's sharing mode: `timeslice` or `mps` |

CREATE OR REPLACE VIEW {{.DB}}.chargeback_jobs {{.OnCluster}} AS
SELECT
    j.job AS job, j.cluster AS cluster, j.team AS team, j.project AS project, j.queue AS queue,
    j.pool AS pool, j.model_name AS model_name, j.workload AS workload, j.source AS source,
    j.card AS requested_card, j.gpus AS requested_gpus,
    j.submit_time AS submit_time, j.start_time AS start_time, j.end_time AS end_time,
    j.state AS state, j.status AS status, j.attempt AS attempt, j.rerun_of AS rerun_of,
    toUInt8(j.status = 'failed' AND j.job IN (SELECT e.rerun_of FROM {{.DB}}.job_events AS e WHERE e.rerun_of != '')) AS failed_rerun,
    if(j.start_time IS NULL, NULL,
       greatest(dateDiff('millisecond', ifNull(j.submit_time, j.start_time), j.start_time), 0) / 3600000) AS queue_wait_hours,
    j.mig_profile AS requested_mig_profile, j.mig_instances AS requested_mig_instances,
    j.gpu_fraction AS requested_gpu_fraction, j.sharing AS requested_sharing
FROM {{.DB}}.jobs AS j;
