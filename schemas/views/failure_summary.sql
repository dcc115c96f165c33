-- `job_failures` counted per UTC day of the end, cluster, team, queue, pool, model,
-- card type and reason. The failure rate of a group is the sum of `share` over its
-- reasons other than `''` (succeeded) and `cancelled`.
--
-- | column | type | meaning |
-- | --- | --- | --- |
-- | `day` | Date | UTC day the attempts ended |
-- | `cluster` | String | cluster |
-- | `team` | String | team |
-- | `queue` | String | queue |
-- | `pool` | String | pool |
-- | `model_name` | String | model |
-- | `card` | String | card type |
-- | `reason` | String | reason (`''`: succeeded) |
-- | `attempts` | UInt64 | attempts that ended so |
-- | `group_attempts` | UInt64 | attempts that ended in the group (every reason) |
-- | `share` | Float64 | `attempts` / `group_attempts` |
-- | `gpu_hours` | Float64 | GPU-hours they held |
-- | `currency` | String | currency of the costs |
-- | `cost` | Nullable(Float64) | their cost; NULL if any is unpriced |
-- | `rerun_attempts` | UInt64 | of them, attempts that were rerun |
-- | `failed_rerun_gpu_hours` | Float64 | their GPU-hours: work done again |
-- | `failed_rerun_cost` | Nullable(Float64) | their cost |
--
-- ```sql
-- -- failure rate and failed-rerun cost per team and reason, last 30 days
-- SELECT team, reason, sum(attempts) AS n,
--        n / sum(n) OVER (PARTITION BY team) AS rate, sum(failed_rerun_cost) AS rerun_cost
-- FROM failure_summary WHERE day >= today() - 30 GROUP BY team, reason ORDER BY team, n DESC;
-- ```

CREATE OR REPLACE VIEW {{.DB}}.failure_summary {{.OnCluster}} AS
SELECT
    toDate(assumeNotNull(f.end_time))                 AS day,
    f.cluster                                         AS cluster,
    f.team                                            AS team,
    f.queue                                           AS queue,
    f.pool                                            AS pool,
    f.model_name                                      AS model_name,
    f.card                                            AS card,
    f.reason                                          AS reason,
    count()                                           AS attempts,
    sum(count()) OVER (PARTITION BY day, cluster, team, queue, pool, model_name, card) AS group_attempts,
    attempts / group_attempts                         AS share,
    sum(f.gpu_hours)                                  AS gpu_hours,
    anyIf(f.currency, f.currency != '')               AS currency,
    if(countIf(f.cost IS NULL AND f.gpu_hours > 0) > 0 OR uniqExactIf(f.currency, f.currency != '') > 1,
       NULL, ifNull(sum(f.cost), 0))                  AS cost,
    countIf(f.failed_rerun = 1)                       AS rerun_attempts,
    sumIf(f.gpu_hours, f.failed_rerun = 1)            AS failed_rerun_gpu_hours,
    if(countIf(f.failed_rerun = 1 AND f.cost IS NULL AND f.gpu_hours > 0) > 0
       OR uniqExactIf(f.currency, f.failed_rerun = 1 AND f.currency != '') > 1,
       NULL, ifNull(sumIf(f.cost, f.failed_rerun = 1), 0)) AS failed_rerun_cost
FROM {{.DB}}.job_failures AS f
GROUP BY day, cluster, team, queue, pool, model_name, card, reason;
