-- Each job's processes on each GPU unit, minute by minute, from the process rollup:
-- one row per GPU unit, job and minute, with sums and sample counts so that minutes
-- can be weighed into coarser buckets. The console's job page charts a job's processes
-- from it. A filter on `gpu_uuid`, `job` or `minute` is applied before the rows are
-- summed.
--
-- | column | type | meaning |
-- | --- | --- | --- |
-- | `gpu_uuid` | LowCardinality(String) | GPU (GPU-…) or MIG instance (MIG-…) |
-- | `job` | LowCardinality(String) | job key; empty when the processes could not be attributed |
-- | `minute` | DateTime('UTC') | start of the minute |
-- | `samples` | UInt64 | process samples: one per process per tick |
-- | `sm_util_sum` | Float64 | the processes' SM utilisation (ratio) summed over the samples that have it |
-- | `sm_util_samples` | UInt64 | samples with SM utilisation |
-- | `fb_used_mib_max` | UInt32 | largest memory one process of the job held, MiB |

CREATE OR REPLACE VIEW {{.DB}}.process_activity_minutely {{.OnCluster}} AS
SELECT
    gpu_uuid,
    job,
    minute,
    sum(samples)         AS samples,
    sum(sm_util_sum)     AS sm_util_sum,
    sum(sm_util_samples) AS sm_util_samples,
    toUInt32(max(fb_used_mib_max)) AS fb_used_mib_max
FROM {{.DB}}.process_minute
GROUP BY gpu_uuid, job, minute;
