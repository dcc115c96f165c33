package chargeback

import (
	"strings"
	"text/template"

	"github.com/gpupool/gpupool/schemas"
)

// reportTemplate prices and labels the core's rows and sums them by Keys. It is
// chargeback_priced and chargeback_daily (migration 0003) in one query, so that
// the raw rendering reproduces the views from the raw tables alone.
//
// Cost rules, the same as the views': an hour is priced by the price book row in
// effect at its start; a group with any unpriced GPU-hour, or with prices in more
// than one currency, has cost NULL (never 0) and says how many GPU-hours were
// unpriced.
var reportTemplate = template.Must(template.New("report").Parse(`SELECT
    {{.Keys}},
{{.Figures}}{{if .Late}},
    {{.Late}}{{end}}
FROM (
    SELECT
        c.hour AS hour, toDate(c.hour) AS day, toStartOfMonth(c.hour) AS month,
        c.job AS job, c.gpu_uuid AS gpu_uuid, c.cluster AS cluster, c.card AS card,
        l.team AS team, l.project AS project, l.pool AS pool, l.model_name AS model_name,
        l.status AS status, l.attempt AS attempt, l.rerun_of AS rerun_of, l.failed_rerun AS failed_rerun,
        c.gpu_hours AS gpu_hours, c.used_gpu_hours AS used_gpu_hours, c.idle_gpu_hours AS idle_gpu_hours,
        c.unmeasured_gpu_hours AS unmeasured_gpu_hours, c.unobserved_gpu_hours AS unobserved_gpu_hours,
        c.energy_kwh AS energy_kwh, c.queue_wait_hours AS queue_wait_hours,
        toUInt8(ifNull(p.valid_to > c.hour, 0)) AS priced,
        if(priced = 1, toFloat64(p.price_per_gpu_hour), NULL) AS price_per_gpu_hour,
        if(priced = 1, toString(p.currency), '') AS currency,
        c.gpu_hours * price_per_gpu_hour AS cost,
        c.idle_gpu_hours * price_per_gpu_hour AS idle_cost,
        c.queue_wait_hours * {{.Requested}} AS queue_wait_gpu_hours,
        toUInt8(ifNull(qp.valid_to > c.hour, 0)) AS queue_wait_pool_priced,
        multiIf(queue_wait_pool_priced = 1, toFloat64(qp.price_per_gpu_hour), priced = 1, price_per_gpu_hour, NULL) AS queue_wait_price_per_gpu_hour,
        multiIf(queue_wait_pool_priced = 1, toString(qp.currency), currency) AS queue_wait_currency,
        queue_wait_gpu_hours * queue_wait_price_per_gpu_hour AS queue_wait_cost,
        toUInt8(ifNull(ep.valid_to > c.hour, 0)) AS energy_priced,
        if(energy_priced = 1, toFloat64(ep.price_per_gpu_hour), NULL) AS energy_price_per_kwh,
        if(energy_priced = 1, toString(ep.currency), '') AS energy_currency,
        c.energy_kwh * energy_price_per_kwh AS energy_cost
    FROM (
{{.Core}}
    ) AS c
    ASOF LEFT JOIN ({{.Prices}}) AS p ON c.card = p.card AND c.hour >= p.valid_from
    LEFT JOIN ({{.Labels}}) AS l ON c.job = l.job
    ASOF LEFT JOIN ({{.Prices}}) AS qp ON concat('queue-wait:', l.pool) = qp.card AND c.hour >= qp.valid_from
    ASOF LEFT JOIN ({{.Prices}}) AS ep ON concat('energy:', c.cluster) = ep.card AND c.hour >= ep.valid_from
    WHERE c.job != ''
) AS x
GROUP BY {{.Keys}}{{if .Late}}, {{.Late}}{{end}}
ORDER BY {{.Keys}}{{if .Late}}, {{.Late}}{{end}}
SETTINGS join_use_nulls = 0`))

// reportSources are where a report reads prices and job labels.
type reportSources struct {
	Prices string
	Labels string
}

// viewReportSources read the finance views of migration 0003.
var viewReportSources = reportSources{
	Prices: "SELECT pt.card AS card, pt.valid_from AS valid_from, pt.valid_to AS valid_to, pt.price_per_gpu_hour AS price_per_gpu_hour, pt.currency AS currency FROM price_timeline AS pt",
	Labels: "SELECT cj.job AS job, cj.team AS team, cj.project AS project, cj.pool AS pool, cj.model_name AS model_name, cj.status AS status, cj.attempt AS attempt, cj.rerun_of AS rerun_of, cj.failed_rerun AS failed_rerun, cj.requested_gpus AS requested_gpus, cj.requested_mig_profile AS requested_mig_profile, cj.requested_mig_instances AS requested_mig_instances, cj.requested_gpu_fraction AS requested_gpu_fraction FROM chargeback_jobs AS cj",
}

// rawReportSources repeat price_book_current, price_timeline and chargeback_jobs
// over the raw tables.
var rawReportSources = reportSources{
	Prices: `
        SELECT pt.card AS card, pt.valid_from AS valid_from, pt.valid_to AS valid_to,
               pt.price_per_gpu_hour AS price_per_gpu_hour, pt.currency AS currency
        FROM (
            SELECT b.card AS card, b.effective_from AS valid_from,
                   least(ifNull(b.effective_to, toDateTime(4294967295, 'UTC')),
                         leadInFrame(b.effective_from, 1, toDateTime(4294967295, 'UTC'))
                             OVER (PARTITION BY b.card ORDER BY b.effective_from ROWS BETWEEN CURRENT ROW AND 1 FOLLOWING)) AS valid_to,
                   b.price_per_gpu_hour AS price_per_gpu_hour, b.currency AS currency
            FROM (
                SELECT pb.card AS card, pb.effective_from AS effective_from,
                       argMax(tuple(pb.effective_to), pb.updated_at).1 AS effective_to,
                       argMax(pb.price_per_gpu_hour, pb.updated_at) AS price_per_gpu_hour,
                       argMax(pb.currency, pb.updated_at) AS currency
                FROM price_book AS pb
                GROUP BY pb.card, pb.effective_from
                HAVING argMax(pb.deleted, pb.updated_at) = 0
            ) AS b
        ) AS pt
        WHERE pt.valid_to > pt.valid_from`,
	Labels: `
        SELECT e.job AS job,
               argMaxIf(e.team, e.ts, e.team != '') AS team,
               argMaxIf(e.project, e.ts, e.project != '') AS project,
               argMaxIf(e.pool, e.ts, e.pool != '') AS pool,
               argMaxIf(e.model_name, e.ts, e.model_name != '') AS model_name,
               argMaxIf(e.status, e.ts, e.status != '') AS status,
               max(e.attempt) AS attempt,
               argMaxIf(e.rerun_of, e.ts, e.rerun_of != '') AS rerun_of,
               toUInt8(status = 'failed' AND e.job IN (SELECT r.rerun_of FROM job_events AS r WHERE r.rerun_of != '')) AS failed_rerun,
               argMaxIf(e.gpus, e.ts, e.gpus > 0) AS requested_gpus,
               argMaxIf(e.mig_profile, e.ts, e.mig_profile != '') AS requested_mig_profile,
               argMaxIf(e.mig_instances, e.ts, e.mig_instances > 0) AS requested_mig_instances,
               argMaxIf(e.gpu_fraction, e.ts, e.gpu_fraction > 0) AS requested_gpu_fraction
        FROM job_events AS e
        GROUP BY e.job`,
}

// Grouping keys of the reports: those selected before the figures, and those
// after (added by a later migration, so that the views' earlier columns keep
// their places).
const (
	jobKeys   = "job, team, project, pool, model_name, card, status, attempt, rerun_of, cluster"
	dailyKeys = "day, team, project, model_name, pool, card"
	dailyLate = "cluster"
)

// requestedGPUs is the GPUs a job asked for as GPU equivalents (a MIG
// instance by its slices, a fraction by its share), as chargeback_pricing.tmpl weighs them.
var requestedGPUs = schemas.RequestedGPUsSQL("l.requested_gpus", "c.card", "l.requested_mig_profile", "l.requested_mig_instances", "l.requested_gpu_fraction")

// renderReport returns the report over the core rendered from src, priced and
// labelled from rs, grouped by keys.
func renderReport(src sources, rs reportSources, keys, late string) string {
	return renderReportOver(renderCore(src), rs, keys, late)
}

// renderReportOver returns the report over rows, a query with the core's columns.
func renderReportOver(rows string, rs reportSources, keys, late string) string {
	var sb strings.Builder
	err := reportTemplate.Execute(&sb, struct {
		Keys, Late, Core, Prices, Labels, Figures, Requested string
	}{keys, late, rows, rs.Prices, rs.Labels, Figures("x"), requestedGPUs})
	if err != nil {
		panic("chargeback: report query template: " + err.Error()) // fixed inputs: caught by any test
	}
	return sb.String()
}

// RawDailyQuery is the one query that reproduces chargeback_daily for a period
// from the raw tables (gpu_samples, process_samples, job_events, price_book),
// with parameters {from:DateTime64(3, 'UTC')} and {to:DateTime64(3, 'UTC')}.
// docs/finance.md prints it.
func RawDailyQuery() string { return renderReport(rawSources, rawReportSources, dailyKeys, dailyLate) }

// rollupDailyQuery is RawDailyQuery over the rollups: the live form of
// chargeback_daily for a period, without a refresh.
func rollupDailyQuery() string {
	return renderReport(rollupSources, viewReportSources, dailyKeys, dailyLate)
}

// figuresTemplate is the chargeback's figures over rows of chargeback_priced's
// shape aliased {a}, with its cost rules: money is NULL when any hour is unpriced
// or currencies mix, never 0.
const figuresTemplate = `    anyIf({a}.currency, {a}.priced = 1) AS currency,
    uniqExact({a}.job) AS jobs,
    sum({a}.gpu_hours) AS gpu_hours,
    sum({a}.used_gpu_hours) AS used_gpu_hours,
    sum({a}.idle_gpu_hours) AS idle_gpu_hours,
    sum({a}.unmeasured_gpu_hours) AS unmeasured_gpu_hours,
    sumIf({a}.gpu_hours, {a}.priced = 0) AS unpriced_gpu_hours,
    if(countIf({a}.priced = 0) > 0 OR uniqExactIf({a}.currency, {a}.priced = 1) > 1, NULL, sum({a}.cost)) AS cost,
    if(countIf({a}.priced = 0) > 0 OR uniqExactIf({a}.currency, {a}.priced = 1) > 1, NULL, sum({a}.idle_cost)) AS idle_cost,
    sumIf({a}.gpu_hours, {a}.failed_rerun = 1) AS failed_rerun_gpu_hours,
    if(countIf({a}.priced = 0 AND {a}.failed_rerun = 1) > 0 OR uniqExactIf({a}.currency, {a}.priced = 1 AND {a}.failed_rerun = 1) > 1,
       NULL, ifNull(sumIf({a}.cost, {a}.failed_rerun = 1), 0)) AS failed_rerun_cost,
    sum({a}.queue_wait_hours) AS queue_wait_hours,
    sum({a}.energy_kwh) AS energy_kwh,
    sum({a}.unobserved_gpu_hours) AS unobserved_gpu_hours,
    sum({a}.queue_wait_gpu_hours) AS queue_wait_gpu_hours,
    anyIf({a}.queue_wait_currency, {a}.queue_wait_currency != '') AS queue_wait_currency,
    if(countIf({a}.queue_wait_gpu_hours > 0 AND {a}.queue_wait_currency = '') > 0 OR uniqExactIf({a}.queue_wait_currency, {a}.queue_wait_gpu_hours > 0) > 1,
       NULL, ifNull(sumIf({a}.queue_wait_cost, {a}.queue_wait_gpu_hours > 0), 0)) AS queue_wait_cost,
    anyIf({a}.energy_currency, {a}.energy_currency != '') AS energy_currency,
    sumIf({a}.energy_kwh, {a}.energy_currency = '') AS unpriced_energy_kwh,
    if(countIf({a}.energy_kwh > 0 AND {a}.energy_currency = '') > 0 OR uniqExactIf({a}.energy_currency, {a}.energy_kwh > 0) > 1,
       NULL, ifNull(sumIf({a}.energy_cost, {a}.energy_kwh > 0), 0)) AS energy_cost`

// Figures returns the chargeback's aggregate columns (currency, jobs, gpu_hours,
// used/idle/unmeasured/unpriced GPU-hours, cost, idle_cost, failed reruns, queue
// wait, energy, unobserved GPU-hours, then queue-wait and energy cost with their currencies) over rows of chargeback_priced's shape aliased alias. The finance
// views of migrations 0003, 0007 and 0009 spell out the same columns.
func Figures(alias string) string { return strings.ReplaceAll(figuresTemplate, "{a}", alias) }
