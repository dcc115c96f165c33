-- What idle GPUs cost, per day and job attempt: who pays for GPUs held and not used.
--
-- | column | type | meaning |
-- | --- | --- | --- |
-- | `day` | Date | UTC day |
-- | `team` | String | team that owns the job |
-- | `project` | String | project billed |
-- | `job` | String | job attempt key |
-- | `model_name` | String | model |
-- | `pool` | String | pool |
-- | `card` | LowCardinality(String) | card type |
-- | `currency` | String | currency of `idle_cost` |
-- | `gpu_hours` | Float64 | GPU-hours held that day |
-- | `idle_gpu_hours` | Float64 | of which measured idle |
-- | `idle_ratio` | Nullable(Float64) | idle share of the measured time, 0..1; NULL when nothing was measured |
-- | `idle_cost` | Nullable(Float64) | `idle_gpu_hours` × price; NULL if unpriced |
-- | `cluster` | LowCardinality(String) | cluster of the GPUs |

CREATE OR REPLACE VIEW {{.DB}}.idle_cost {{.OnCluster}} AS
SELECT
    toDate(c.hour)                                    AS day,
    c.team                                            AS team,
    c.project                                         AS project,
    c.job                                             AS job,
    c.model_name                                      AS model_name,
    c.pool                                            AS pool,
    c.card                                            AS card,
    anyIf(c.currency, c.priced = 1)                   AS currency,
    sum(c.gpu_hours)                                  AS gpu_hours,
    sum(c.idle_gpu_hours)                             AS idle_gpu_hours,
    sum(c.idle_gpu_hours) / nullIf(sum(c.used_gpu_hours) + sum(c.idle_gpu_hours), 0) AS idle_ratio,
    if(countIf(c.priced = 0) > 0 OR uniqExactIf(c.currency, c.priced = 1) > 1, NULL, sum(c.idle_cost)) AS idle_cost,
    c.cluster                                         AS cluster
FROM {{.DB}}.chargeback_job_priced AS c
WHERE c.job != ''
GROUP BY day, team, project, job, model_name, pool, card, cluster;
