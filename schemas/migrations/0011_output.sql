-- 0011: what jobs produced, per GPU-hour and per unit of cost.
--
-- A job reports its output on any of its events (its launcher, typically on the end
-- event) with two labels: gpupool.io/output-units, a decimal count, and
-- gpupool.io/output-unit, what was counted (tokens, samples, requests, steps). The
-- latest report wins, so a launcher may post running totals. A job that reports
-- nothing has output_units NULL, and every figure built on it is NULL (shown as
-- "—"), never 0.
--
-- cost_per_units prices a scale of units that reads well: per 1,000,000 tokens, per
-- 1,000 samples or requests, per 1 of anything else (per_units says which).

CREATE VIEW IF NOT EXISTS {{.DB}}.job_output {{.OnCluster}} AS
SELECT
    o.job AS job, j.cluster AS cluster, j.team AS team, j.project AS project, j.model_name AS model_name,
    if(c.card != '', c.card, toString(j.card)) AS card,
    toStartOfMonth(toDateTime(ifNull(j.end_time, j.updated_at), 'UTC')) AS month,
    o.output_unit AS output_unit,
    o.output_units AS output_units,
    multiIf(o.output_unit = 'tokens', 1000000, o.output_unit IN ('samples', 'requests'), 1000, 1) AS per_units,
    c.gpu_hours AS gpu_hours, c.currency AS currency, c.cost AS cost,
    o.output_units / nullIf(c.gpu_hours, 0) AS output_per_gpu_hour,
    c.cost / nullIf(o.output_units, 0) * per_units AS cost_per_units,
    j.end_time AS end_time
FROM (
    SELECT e.job AS job,
           argMaxIf(e.labels['gpupool.io/output-unit'], e.ts, e.labels['gpupool.io/output-units'] != '') AS output_unit,
           argMaxIf(toFloat64OrNull(e.labels['gpupool.io/output-units']), e.ts, e.labels['gpupool.io/output-units'] != '') AS output_units
    FROM {{.DB}}.job_events AS e
    GROUP BY e.job
) AS o
INNER JOIN {{.DB}}.jobs AS j ON j.job = o.job
LEFT JOIN (
    SELECT p.job AS job, toString(any(p.card)) AS card, sum(p.gpu_hours) AS gpu_hours,
           anyIf(p.currency, p.priced = 1) AS currency,
           if(countIf(p.priced = 0) > 0 OR uniqExactIf(p.currency, p.priced = 1) > 1, NULL, sum(p.cost)) AS cost
    FROM {{.DB}}.chargeback_priced AS p
    WHERE p.job != ''
    GROUP BY p.job
) AS c ON c.job = o.job
WHERE j.start_time IS NOT NULL;

CREATE VIEW IF NOT EXISTS {{.DB}}.output_summary {{.OnCluster}} AS
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
