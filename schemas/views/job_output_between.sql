-- `job_output` for the attempts that ended in a period, each source read for those
-- alone (migration 0018), with the same columns: `job_output_between(from = …, to =
-- …)`, an attempt in the period when its `end_time` is at or after `from` and before
-- `to`. The report and the console's chargeback page read it.

CREATE OR REPLACE VIEW {{.DB}}.job_output_between {{.OnCluster}} AS
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
    WHERE e.job IN (SELECT pe.job FROM {{.DB}}.job_events AS pe WHERE pe.event IN ('end', 'preempt') AND pe.ts >= {from:DateTime64(3, 'UTC')} AND pe.ts < {to:DateTime64(3, 'UTC')})
    GROUP BY e.job
) AS o
INNER JOIN (
    SELECT * FROM {{.DB}}.jobs AS jb
    WHERE jb.job IN (SELECT pe.job FROM {{.DB}}.job_events AS pe WHERE pe.event IN ('end', 'preempt') AND pe.ts >= {from:DateTime64(3, 'UTC')} AND pe.ts < {to:DateTime64(3, 'UTC')})
) AS j ON j.job = o.job
LEFT JOIN (
    SELECT p.job AS job, toString(any(p.card)) AS card, sum(p.gpu_hours) AS gpu_hours,
           anyIf(p.currency, p.priced = 1) AS currency,
           if(countIf(p.priced = 0) > 0 OR uniqExactIf(p.currency, p.priced = 1) > 1, NULL, sum(p.cost)) AS cost
    FROM {{.DB}}.chargeback_job_priced AS p
    WHERE p.job != '' AND p.job IN (SELECT pe.job FROM {{.DB}}.job_events AS pe WHERE pe.event IN ('end', 'preempt') AND pe.ts >= {from:DateTime64(3, 'UTC')} AND pe.ts < {to:DateTime64(3, 'UTC')})
      AND p.hour >= toStartOfHour(assumeNotNull((SELECT min(ps.ts) FROM {{.DB}}.job_events AS ps WHERE ps.event = 'start' AND ps.job IN (SELECT pe.job FROM {{.DB}}.job_events AS pe WHERE pe.event IN ('end', 'preempt') AND pe.ts >= {from:DateTime64(3, 'UTC')} AND pe.ts < {to:DateTime64(3, 'UTC')})))) AND p.hour < {to:DateTime64(3, 'UTC')}
    GROUP BY p.job
) AS c ON c.job = o.job
WHERE j.start_time IS NOT NULL AND j.end_time >= {from:DateTime64(3, 'UTC')} AND j.end_time < {to:DateTime64(3, 'UTC')};
