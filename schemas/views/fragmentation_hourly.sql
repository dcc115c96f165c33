-- The scheduler's fragmentation figure per hour, cluster and card type: free and
-- stranded whole GPUs (stranded: free, on nodes where no queued job's shape fits),
-- from the samples the scheduler writes to `scheduler_fragmentation` while it places
-- jobs on nodes (every `scheduler.fragmentation_every`, 1 min by default). Each
-- sample stands for the time until the next sample of its cluster and card, at most
-- 15 minutes (a longer gap, the scheduler down or not placing, counts its first 15
-- minutes; the last sample counts nothing), all of it in the sample's hour.
--
-- | column | type | meaning |
-- | --- | --- | --- |
-- | `hour` | DateTime('UTC') | UTC hour of the samples |
-- | `cluster` | String | cluster |
-- | `card` | String | card type |
-- | `samples` | UInt64 | samples in the hour |
-- | `sampled_hours` | Float64 | hours the samples stand for (at most 1 at the default spacing) |
-- | `gpus` | UInt32 | the most whole GPUs of the cluster and card in a sample |
-- | `mean_free_gpus` | Float64 | free GPUs, averaged over `sampled_hours` (over the samples when that is 0) |
-- | `mean_stranded_gpus` | Float64 | stranded GPUs, averaged the same way |
-- | `free_gpu_hours` | Float64 | free GPUs integrated over the samples' spacing |
-- | `stranded_gpu_hours` | Float64 | stranded GPUs integrated the same way: free capacity no waiting job could use |
-- | `max_stranded_gpus` | UInt32 | the most stranded GPUs in a sample |
-- | `max_waiting` | UInt32 | the most queued requests that could use the cluster and card, in a sample |

CREATE OR REPLACE VIEW {{.DB}}.fragmentation_hourly {{.OnCluster}} AS
SELECT
    toStartOfHour(toDateTime(s.ts, 'UTC'))                      AS hour,
    s.cluster                                                   AS cluster,
    s.card                                                      AS card,
    count()                                                     AS samples,
    sum(s.span_s) / 3600                                        AS sampled_hours,
    max(s.gpus)                                                 AS gpus,
    if(sum(s.span_s) > 0, sum(s.free * s.span_s) / sum(s.span_s), avg(s.free))         AS mean_free_gpus,
    if(sum(s.span_s) > 0, sum(s.stranded * s.span_s) / sum(s.span_s), avg(s.stranded)) AS mean_stranded_gpus,
    sum(s.free * s.span_s) / 3600                               AS free_gpu_hours,
    sum(s.stranded * s.span_s) / 3600                           AS stranded_gpu_hours,
    max(s.stranded)                                             AS max_stranded_gpus,
    max(s.waiting)                                              AS max_waiting
FROM (
    SELECT
        f.ts AS ts, f.cluster AS cluster, f.card AS card, f.gpus AS gpus, f.free AS free,
        f.stranded AS stranded, f.waiting AS waiting,
        least(greatest(dateDiff('millisecond', f.ts, leadInFrame(f.ts, 1, f.ts) OVER w), 0), 900000) / 1000 AS span_s
    FROM (
        SELECT ts, toString(cluster) AS cluster, toString(card) AS card, gpus, free, stranded, waiting
        FROM {{.DB}}.scheduler_fragmentation
        LIMIT 1 BY cluster, card, ts
    ) AS f
    WINDOW w AS (PARTITION BY f.cluster, f.card ORDER BY f.ts ROWS BETWEEN CURRENT ROW AND 1 FOLLOWING)
) AS s
GROUP BY hour, cluster, card;
