-- What each job attempt that ran produced, from what its launcher reported: labels
-- `gpupool.io/output-units` (a decimal count) and `gpupool.io/output-unit` (what was
-- counted: `tokens`, `samples`, `requests`, `steps`) on any of its events, the latest
-- report winning (so a launcher may post running totals, and the end event the final
-- one). A job that reports nothing has `output_units` NULL and every figure built on it
-- NULL (shown as "—"), never 0. The node's collector posts them itself for a job that
-- names a Prometheus counter (below).
--
-- | column | type | meaning |
-- | --- | --- | --- |
-- | `job` | String | job attempt key |
-- | `cluster` | String | cluster |
-- | `team` | String | team |
-- | `project` | String | project |
-- | `model_name` | String | model |
-- | `card` | String | card type it ran on |
-- | `month` | Date | first day of the UTC month it ended in (or last reported in, while running) |
-- | `output_unit` | String | what was counted; empty when nothing was reported |
-- | `output_units` | Nullable(Float64) | how many; NULL when nothing was reported |
-- | `per_units` | UInt32 | the scale of `cost_per_units`: 1000000 for tokens, 1000 for samples and requests, 1 otherwise |
-- | `gpu_hours` | Float64 | GPU-hours it held (refreshed hours) |
-- | `currency` | String | currency of the costs |
-- | `cost` | Nullable(Float64) | its cost; NULL if any hour is unpriced |
-- | `output_per_gpu_hour` | Nullable(Float64) | `output_units` / `gpu_hours` |
-- | `cost_per_units` | Nullable(Float64) | `cost` per `per_units` units (per 1 M tokens, per 1 k samples) |
-- | `end_time` | Nullable(DateTime64(3, 'UTC')) | when it ended; NULL while it runs |
--
-- #### Output from a Prometheus counter
--
-- A job names the counter that counts its output, and the collector on its node
-- scrapes the job's metrics endpoint every `collector.output.interval` (30 s;
-- `timeout` 5 s) and reports the counter's increase as the job's output:
--
-- | where | how |
-- | --- | --- |
-- | pod annotations (or labels) | `gpupool.io/output-metric: vllm:generation_tokens_total`, with the port in `gpupool.io/output-port` or else `prometheus.io/port`; path `gpupool.io/output-path`, else `prometheus.io/path`, else `/metrics`; scraped at the pod's IP |
-- | Slurm job comment | `sbatch --comment "gpupool.io/output-metric=train_samples_total,gpupool.io/output-port=9100"` (the prolog writes `SLURM_JOB_COMMENT` to the job file); scraped at 127.0.0.1 |
-- | any job label | the same keys as labels (a mapping-file rule's `labels`); scraped at 127.0.0.1 |
--
-- `gpupool.io/output-unit` says what the counter counts; without it the unit comes from
-- the metric's name (`…token…` tokens, `…sample…` samples, `…request…` requests,
-- `…step…` steps, else the name without `_total`). The exposition is parsed with
-- `github.com/prometheus/common/expfmt` (text format); the counter's series are summed
-- (vLLM has one per served model). Each series counts from 0 when first seen (the
-- counter starts with the job's process) and across resets (a value below the last one
-- means the process restarted and counted again). The running total goes out on a
-- repeated start event every `collector.output.report_every` (5 min) while the job
-- runs, and on its end event. An endpoint that does not answer, answers garbage, or
-- lacks the metric (or has it as a gauge or histogram) is logged with its URL and
-- counted in `gpupool_collector_output_scrapes_total{result="error"}`; the job then
-- reports no output until a scrape succeeds, and none at all if none does — never 0.
-- A name or port that cannot be scraped (not a metric name, not a port number) is
-- logged when the job is attributed, and the job reports nothing.

CREATE OR REPLACE VIEW {{.DB}}.job_output {{.OnCluster}} AS
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
    FROM {{.DB}}.chargeback_job_priced AS p
    WHERE p.job != ''
    GROUP BY p.job
) AS c ON c.job = o.job
WHERE j.start_time IS NOT NULL;
