package analyzer

import (
	"context"
	"fmt"
	"time"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
)

// Summary describes a period of the fleet.
type Summary struct {
	// GPUHours: team, card, gpu_hours (allocated), jobs.
	GPUHours *store.Result
	// Utilisation: card, gpus, samples, sm_active and gr_engine_active p50/p95.
	Utilisation *store.Result
	// Jobs: submitted, running, succeeded, failed, queue wait p50/p95 (minutes).
	Jobs *store.Result
	// Rows: table_name, rows, duplicates (rows sharing a sample's identity).
	Rows *store.Result
	// Failures: per reason, of the attempts that ended in the period and did
	// not succeed (job_failures_between; the pool's own reclaims apart as
	// schemas.ReasonPoolReclaim): attempts, their share of all the ended
	// attempts (succeeded ones included), GPU-hours, failed-rerun cost (empty
	// when a rerun's hours are unpriced or currencies mix).
	Failures *store.Result
	// Costs: per cluster (chargeback_daily): cost, energy kWh and cost, waiting
	// GPU-hours and their opportunity cost.
	Costs *store.Result
	// Output: per model (job_output, attempts that ended in the period): unit,
	// jobs reporting, output per GPU-hour, cost per 1 M tokens or 1 k units.
	Output *store.Result
}

// summaryQueries are the SQL behind Summary; {from} and {to} bound the period.
var summaryQueries = struct{ gpuHours, util, jobs, rows, failures, costs, output string }{
	// Allocated GPU-hours: each job's GPUs from start to end (or the period's end),
	// clipped to the period; the card comes from the GPUs' own samples, and a
	// MIG slice weighs its share of its GPU (schemas.GPUWeightSQL).
	gpuHours: `
WITH gpu AS (
    SELECT gpu_uuid, card, ` + schemas.GPUWeightSQL("card", "mig") + ` AS weight
    FROM (
        SELECT gpu_uuid, any(card) AS card, any(mig_profile) AS mig
        FROM gpu_samples
        WHERE ts >= {from:DateTime64(3, 'UTC')} AND ts < {to:DateTime64(3, 'UTC')}
        GROUP BY gpu_uuid
    )
)
SELECT team, card, round(sum(weight * hours), 2) AS gpu_hours, uniqExact(job) AS jobs
FROM (
    SELECT job, team, arrayJoin(gpu_uuids) AS gpu_uuid,
           dateDiff('millisecond', greatest(start_time, {from:DateTime64(3, 'UTC')}),
                    least(coalesce(end_time, {to:DateTime64(3, 'UTC')}), {to:DateTime64(3, 'UTC')})) / 3600000 AS hours
    FROM jobs
    WHERE start_time IS NOT NULL AND start_time < {to:DateTime64(3, 'UTC')}
      AND coalesce(end_time, {to:DateTime64(3, 'UTC')}) > {from:DateTime64(3, 'UTC')}
) AS a
INNER JOIN gpu USING (gpu_uuid)
GROUP BY team, card
ORDER BY team, card`,
	util: `
SELECT card,
       uniqExact(gpu_uuid) AS gpus,
       count() AS samples,
       round(quantileExact(0.5)(sm_active), 3) AS sm_active_p50,
       round(quantileExact(0.95)(sm_active), 3) AS sm_active_p95,
       round(quantileExact(0.5)(gr_engine_active), 3) AS gr_active_p50,
       round(quantileExact(0.95)(gr_engine_active), 3) AS gr_active_p95
FROM gpu_samples
WHERE ts >= {from:DateTime64(3, 'UTC')} AND ts < {to:DateTime64(3, 'UTC')}
GROUP BY card
ORDER BY card`,
	jobs: `
SELECT count() AS submitted,
       countIf(state = 'queued') AS queued,
       countIf(state = 'running') AS running,
       countIf(status = 'succeeded') AS succeeded,
       countIf(status = 'failed') AS failed,
       countIf(attempt > 1) AS reruns,
       round(quantileExactIf(0.5)(dateDiff('second', submit_time, start_time) / 60, start_time IS NOT NULL), 1) AS queue_wait_p50_min,
       round(quantileExactIf(0.95)(dateDiff('second', submit_time, start_time) / 60, start_time IS NOT NULL), 1) AS queue_wait_p95_min
FROM jobs
WHERE submit_time >= {from:DateTime64(3, 'UTC')} AND submit_time < {to:DateTime64(3, 'UTC')}`,
	rows: `
SELECT 'gpu_samples' AS table_name, count() AS rows, count() - uniqExact(cluster, node, gpu_uuid, ts) AS duplicates
FROM gpu_samples WHERE ts >= {from:DateTime64(3, 'UTC')} AND ts < {to:DateTime64(3, 'UTC')}
UNION ALL
SELECT 'process_samples', count(), count() - uniqExact(cluster, node, gpu_uuid, pid, ts)
FROM process_samples WHERE ts >= {from:DateTime64(3, 'UTC')} AND ts < {to:DateTime64(3, 'UTC')}
UNION ALL
SELECT 'job_events', count(), count() - uniqExact(job, event, ts)
FROM job_events WHERE ts >= {from:DateTime64(3, 'UTC')} AND ts < {to:DateTime64(3, 'UTC')}`,
	failures: `
SELECT reason, n, round(n / total, 3) AS share_of_ended, gpu_hours, failed_rerun_cost
FROM (
    SELECT ` + schemas.FailureReasonSQL("f.reason", "f.scheduler_decision") + ` AS reason,
           count() AS n, sum(count()) OVER () AS total, round(sum(f.gpu_hours), 2) AS gpu_hours,
           round(if(countIf(f.failed_rerun = 1 AND f.cost IS NULL AND f.gpu_hours > 0) > 0
                    OR uniqExactIf(f.currency, f.failed_rerun = 1 AND f.currency != '') > 1,
                    NULL, ifNull(sumIf(f.cost, f.failed_rerun = 1), 0)), 2) AS failed_rerun_cost
    FROM job_failures_between(from = {from:DateTime64(3, 'UTC')}, to = {to:DateTime64(3, 'UTC')}) AS f
    GROUP BY reason
)
WHERE reason != ''
ORDER BY n DESC, reason`,
	costs: `
SELECT cluster, anyIf(currency, currency != '') AS ccy, round(sum(cost), 2) AS gpu_cost,
       round(sum(energy_kwh), 1) AS energy_kwh, round(sum(energy_cost), 2) AS energy_cost,
       round(sum(queue_wait_gpu_hours), 1) AS queue_wait_gpu_hours, round(sum(queue_wait_cost), 2) AS queue_wait_cost
FROM chargeback_daily
WHERE day >= toDate({from:DateTime64(3, 'UTC')}) AND day <= toDate({to:DateTime64(3, 'UTC')})
GROUP BY cluster
ORDER BY cluster`,
	output: `
SELECT model_name, anyIf(output_unit, output_units IS NOT NULL) AS unit, count() AS jobs,
       countIf(output_units IS NOT NULL) AS reporting,
       round(sumIf(output_units, output_units IS NOT NULL) / nullIf(sumIf(gpu_hours, output_units IS NOT NULL), 0)) AS per_gpu_hour,
       round(sumIf(cost, output_units IS NOT NULL) / nullIf(sumIf(output_units, output_units IS NOT NULL), 0)
             * anyIf(per_units, output_units IS NOT NULL), 4) AS cost_per_units,
       anyIf(per_units, output_units IS NOT NULL) AS scale
FROM job_output
WHERE end_time >= {from:DateTime64(3, 'UTC')} AND end_time < {to:DateTime64(3, 'UTC')}
GROUP BY model_name
ORDER BY model_name`,
}

// TimeParam formats t as a DateTime64(3) query parameter.
func TimeParam(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000") }

// Summarize computes the summary of [from, to).
func Summarize(ctx context.Context, q store.Querier, from, to time.Time) (*Summary, error) {
	p := store.Params{"from": TimeParam(from), "to": TimeParam(to)}
	var s Summary
	for _, step := range []struct {
		name string
		sql  string
		out  **store.Result
	}{
		{"gpu hours", summaryQueries.gpuHours, &s.GPUHours},
		{"utilisation", summaryQueries.util, &s.Utilisation},
		{"jobs", summaryQueries.jobs, &s.Jobs},
		{"rows", summaryQueries.rows, &s.Rows},
		{"failures", summaryQueries.failures, &s.Failures},
		{"costs", summaryQueries.costs, &s.Costs},
		{"output", summaryQueries.output, &s.Output},
	} {
		res, err := q.Query(ctx, step.sql, p)
		if err != nil {
			return nil, fmt.Errorf("analyzer: summary %s: %w", step.name, err)
		}
		*step.out = res
	}
	return &s, nil
}
