-- `job_output` per month, cluster, team, model and card type. Only the jobs that
-- reported count towards output per GPU-hour and cost per unit; `reporting_gpu_hours`
-- against `gpu_hours` says how much of the GPU time that covers. A group whose jobs
-- count different units has `output_units` NULL.
--
-- | column | type | meaning |
-- | --- | --- | --- |
-- | `month` | Date | first day of the UTC month |
-- | `cluster` | String | cluster |
-- | `team` | String | team |
-- | `model_name` | String | model |
-- | `card` | String | card type |
-- | `output_unit` | String | what the reporting jobs counted |
-- | `jobs` | UInt64 | job attempts that ran |
-- | `reporting_jobs` | UInt64 | of them, those that reported output |
-- | `gpu_hours` | Float64 | GPU-hours of all of them |
-- | `reporting_gpu_hours` | Float64 | GPU-hours of those that reported |
-- | `output_units` | Nullable(Float64) | output of those that reported |
-- | `output_per_gpu_hour` | Nullable(Float64) | `output_units` / `reporting_gpu_hours` |
-- | `per_units` | Nullable(UInt32) | scale of `cost_per_units` |
-- | `cost_per_units` | Nullable(Float64) | their cost per `per_units` units |
-- | `currency` | String | currency |

CREATE OR REPLACE VIEW {{.DB}}.output_summary {{.OnCluster}} AS
SELECT
    x.month AS month, x.cluster AS cluster, x.team AS team, x.model_name AS model_name, x.card AS card,
    anyIf(x.output_unit, x.output_units IS NOT NULL) AS output_unit,
    count() AS jobs,
    countIf(x.output_units IS NOT NULL) AS reporting_jobs,
    sum(x.gpu_hours) AS gpu_hours,
    sumIf(x.gpu_hours, x.output_units IS NOT NULL) AS reporting_gpu_hours,
    if(reporting_jobs = 0 OR uniqExactIf(x.output_unit, x.output_units IS NOT NULL) > 1, NULL,
       sumIf(x.output_units, x.output_units IS NOT NULL)) AS output_units,
    output_units / nullIf(reporting_gpu_hours, 0) AS output_per_gpu_hour,
    if(reporting_jobs = 0, NULL, anyIf(x.per_units, x.output_units IS NOT NULL)) AS per_units,
    if(countIf(x.output_units IS NOT NULL AND x.cost IS NULL) > 0 OR uniqExactIf(x.currency, x.output_units IS NOT NULL) > 1, NULL,
       sumIf(x.cost, x.output_units IS NOT NULL)) / nullIf(output_units, 0) * per_units AS cost_per_units,
    anyIf(x.currency, x.currency != '') AS currency
FROM {{.DB}}.job_output AS x
GROUP BY month, cluster, team, model_name, card;
