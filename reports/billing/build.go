package billing

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/gpupool/gpupool/analyzer/chargeback"
	"github.com/gpupool/gpupool/reports"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
)

// Limits of the report's lists.
const (
	topWasteRows = 10
	findingRows  = 10
)

// buildParallel is how many of a report's queries run at once.
const buildParallel = 4

// The queries read only the finance views of docs/finance.md; the chargeback
// figures come from chargeback_job_priced (chargeback_priced's rows summed over
// each job's GPUs, migration 0012), which gives the same figures in a fraction of
// the time because it joins prices and labels to a few rows. Every value from
// outside (the period's bounds and time zone) is a server-side parameter; the only
// text spliced into SQL is the grouping keys below, which are constants.

// figuresSQL are the chargeback figures of chargeback_priced rows, with the views'
// rule that money is NULL when any hour is unpriced or currencies mix.
var figuresSQL = "\n" + chargeback.Figures("c")

// Grouping keys of the totals and breakdowns (constants, never input), in the
// order of Report's lists: totals, teams, projects, cards, clusters, models.
var breakdownSets = [][]string{{}, {"team"}, {"team", "project"}, {"card"}, {"cluster"}, {"model_name"}}

// breakdownKeys are every key of the sets, in grouping()'s argument order.
var breakdownKeys = []string{"team", "project", "card", "cluster", "model_name"}

// breakdownsSQL is the totals and every breakdown, of the period (cur = 1) and
// the one before, in one query: a grouping set per breakdown; g tells which
// (grouping()'s standard bit mask: a bit is 1 where its key is not grouped).
var breakdownsSQL = func() string {
	sel, sets := "", ""
	for _, k := range breakdownKeys {
		sel += fmt.Sprintf("toString(c.%s) AS %s, ", k, k)
	}
	for i, set := range breakdownSets {
		if i > 0 {
			sets += ", "
		}
		sets += "(" + strings.Join(append([]string{"cur"}, set...), ", ") + ")"
	}
	return `SELECT c.hour >= {from:DateTime('UTC')} AS cur, ` + sel + `grouping(` + strings.Join(breakdownKeys, ", ") + `) AS g, ` + figuresSQL + `
FROM chargeback_job_priced AS c
WHERE c.job != '' AND c.hour >= {prev_from:DateTime('UTC')} AND c.hour < {to:DateTime('UTC')}
GROUP BY GROUPING SETS (` + sets + `)
ORDER BY g, cur, ` + strings.Join(breakdownKeys, ", ") + `
SETTINGS force_grouping_standard_compatibility = 1`
}()

const unallocatedSQL = `SELECT
    toString(c.card)                                                  AS card,
    anyIf(c.currency, c.priced = 1)                                   AS currency,
    sum(c.gpu_hours)                                                  AS capacity_gpu_hours,
    sumIf(c.gpu_hours, c.job != '')                                   AS allocated_gpu_hours,
    sumIf(c.gpu_hours, c.job = '')                                    AS unallocated_gpu_hours,
    if(countIf(c.job = '' AND c.priced = 0) > 0 OR uniqExactIf(c.currency, c.job = '' AND c.priced = 1) > 1,
       NULL, ifNull(sumIf(c.cost, c.job = ''), 0))                    AS unallocated_cost
FROM chargeback_job_priced AS c
WHERE c.hour >= {from:DateTime('UTC')} AND c.hour < {to:DateTime('UTC')}
GROUP BY card
ORDER BY card`

const topWasteSQL = `SELECT
    c.job AS job, toString(c.team) AS team, toString(c.project) AS project, toString(c.pool) AS pool,
    toString(any(c.card)) AS card,
    anyIf(c.currency, c.priced = 1)                                   AS currency,
    sum(c.gpu_hours)                                                  AS gpu_hours,
    sum(c.used_gpu_hours)                                             AS used_gpu_hours,
    sum(c.idle_gpu_hours)                                             AS idle_gpu_hours,
    if(countIf(c.priced = 0) > 0 OR uniqExactIf(c.currency, c.priced = 1) > 1, NULL, sum(c.idle_cost)) AS idle_cost
FROM chargeback_job_priced AS c
WHERE c.job != '' AND c.hour >= {from:DateTime('UTC')} AND c.hour < {to:DateTime('UTC')}
GROUP BY job, team, project, pool
HAVING idle_gpu_hours > 0
ORDER BY idle_gpu_hours DESC, job
LIMIT {limit:UInt32}`

// findingsSQL lists every finding episode that overlapped the period, from the
// findings table (not findings_open, which holds only what is open now: a report
// on a past period must still list what was resolved since, and nothing that
// opened after it). An episode runs from the condition's start (since, or
// first_seen when that is earlier) to resolved_at, or last_seen while unresolved.
// Each episode is read at its latest version (argMax by updated_at, exact on
// unmerged parts too). Dropping versions written before the period start first
// loses no episode that overlaps it (its latest version is written at or after
// its end) and changes no latest version.
//
// The waste and cost are the episode's, from since to its latest last_seen (the
// analyzer recomputes them at every pass). The period's part of them is their
// share of the episode's time inside the period, the waste taken as accruing
// evenly from since to last_seen (an episode of no length counts where it
// starts), so the periods' parts of an episode add up to its whole.
// state is the episode's state at the period's end: resolved when resolved_at
// is before it, open otherwise (even when it was resolved later).
const findingsSQL = `SELECT
    id, episode, toString(kind_) AS kind, toString(severity_) AS severity, job_ AS job,
    toString(team_) AS team, toString(project_) AS project, toString(pool_) AS pool, toString(card_) AS card,
    gpu_uuids_ AS gpu_uuids, gpus_ AS gpus,
    since_ AS since, first_seen_ AS first_seen, last_seen_ AS last_seen, resolved_at_ AS resolved_at,
    if(resolved_at_ IS NOT NULL AND resolved_at_ < {to:DateTime64(3, 'UTC')}, 'resolved', 'open') AS state,
    waste_gpu_hours_ AS waste_gpu_hours, waste_cost_ AS waste_cost, toString(currency_) AS currency,
    recommendation_ AS recommendation,
    greatest(dateDiff('millisecond', greatest(since_, {from:DateTime64(3, 'UTC')}), least(last_seen_, {to:DateTime64(3, 'UTC')})), 0) AS in_period_ms,
    greatest(dateDiff('millisecond', since_, last_seen_), 0) AS episode_ms,
    if(episode_ms = 0, toFloat64(since_ >= {from:DateTime64(3, 'UTC')} AND since_ < {to:DateTime64(3, 'UTC')}), in_period_ms / episode_ms) AS period_share,
    waste_gpu_hours_ * period_share AS period_waste_gpu_hours, waste_cost_ * period_share AS period_waste_cost
FROM (
    SELECT id, episode,
        argMax(kind, updated_at) AS kind_, argMax(severity, updated_at) AS severity_,
        argMax(job, updated_at) AS job_, argMax(team, updated_at) AS team_,
        argMax(project, updated_at) AS project_, argMax(pool, updated_at) AS pool_,
        argMax(card, updated_at) AS card_, argMax(gpu_uuids, updated_at) AS gpu_uuids_,
        argMax(evidence, updated_at)['gpus'] AS gpus_,
        argMax(since, updated_at) AS since_, argMax(first_seen, updated_at) AS first_seen_,
        argMax(last_seen, updated_at) AS last_seen_, argMax(resolved_at, updated_at) AS resolved_at_,
        argMax(waste_gpu_hours, updated_at) AS waste_gpu_hours_, argMax(waste_cost, updated_at) AS waste_cost_,
        argMax(currency, updated_at) AS currency_, argMax(recommendation, updated_at) AS recommendation_
    FROM finding_history
    WHERE updated_at >= {from:DateTime64(3, 'UTC')}
    GROUP BY id, episode
)
WHERE least(since_, first_seen_) < {to:DateTime64(3, 'UTC')}
  AND ifNull(resolved_at_, last_seen_) >= {from:DateTime64(3, 'UTC')}
ORDER BY period_waste_gpu_hours DESC, waste_gpu_hours DESC, id, episode
LIMIT {limit:UInt32}`

// fragmentationSQL sums the scheduler's hourly fragmentation figure over the
// period's hours (a sample counts in its own hour: fragmentation_hourly).
const fragmentationSQL = `SELECT
    f.cluster AS cluster, f.card AS card,
    sum(f.sampled_hours)                                        AS sampled_hours,
    sum(f.free_gpu_hours) / nullIf(sum(f.sampled_hours), 0)     AS mean_free_gpus,
    sum(f.stranded_gpu_hours) / nullIf(sum(f.sampled_hours), 0) AS mean_stranded_gpus,
    sum(f.stranded_gpu_hours)                                   AS stranded_gpu_hours,
    max(f.max_waiting)                                          AS max_waiting
FROM fragmentation_hourly AS f
WHERE f.hour >= {from:DateTime('UTC')} AND f.hour < {to:DateTime('UTC')}
GROUP BY cluster, card
ORDER BY stranded_gpu_hours DESC, cluster, card`

// queueWaitSQL covers the attempts that started in the period, as the chargeback
// counts queue wait in the hour an attempt started.
const queueWaitSQL = `SELECT
    team, pool, count() AS jobs,
    quantileExact(0.5)(queue_wait_hours)  AS p50_hours,
    quantileExact(0.95)(queue_wait_hours) AS p95_hours,
    sum(queued_gpu_hours)                 AS queued_gpu_hours
FROM queue_wait
WHERE start_time >= {from:DateTime64(3, 'UTC')} AND start_time < {to:DateTime64(3, 'UTC')}
GROUP BY team, pool
ORDER BY p95_hours DESC, team, pool`

// failuresSQL covers the attempts that ended in the period, classified by
// job_failures_between for them alone (migration 0018), with failure_summary's
// rule that money is NULL when an attempt with GPU-hours is unpriced or
// currencies mix. Preemptions the pool's own scheduler carried out (its
// policies' reclaims and preemptions) are counted apart from the others, as
// ReasonPoolReclaim: they are the policies working, not jobs failing.
var failuresSQL = `SELECT ` + poolReclaimReason + ` AS reason,
    count() AS n, sum(count()) OVER () AS total,
    sum(f.gpu_hours) AS gpu_hours,
    if(countIf(f.cost IS NULL AND f.gpu_hours > 0) > 0 OR uniqExactIf(f.currency, f.currency != '') > 1,
       NULL, ifNull(sum(f.cost), 0)) AS cost,
    if(countIf(f.failed_rerun = 1 AND f.cost IS NULL AND f.gpu_hours > 0) > 0
       OR uniqExactIf(f.currency, f.failed_rerun = 1 AND f.currency != '') > 1,
       NULL, ifNull(sumIf(f.cost, f.failed_rerun = 1), 0)) AS failed_rerun_cost
FROM job_failures_between(from = {from:DateTime64(3, 'UTC')}, to = {to:DateTime64(3, 'UTC')}) AS f
GROUP BY reason
ORDER BY n DESC, reason`

// ReasonPoolReclaim is the failure reason of an attempt the pool's scheduler
// reclaimed or preempted (by its policies); "preempted" is left to the others
// (the cluster's scheduler, a spot reclaim). The rule is schemas' (shared with
// the analyzer's summary).
const ReasonPoolReclaim = schemas.ReasonPoolReclaim

// poolReclaimReason is job_failures' reason with the pool's reclaims apart.
var poolReclaimReason = schemas.FailureReasonSQL("f.reason", "f.scheduler_decision")

// outputSQL covers the attempts that ended in the period (job_output_between,
// migration 0018).
const outputSQL = `SELECT team, model_name,
    anyIf(output_unit, output_units IS NOT NULL) AS unit, count() AS jobs,
    countIf(output_units IS NOT NULL) AS reporting, sum(gpu_hours) AS all_gpu_hours,
    if(reporting = 0 OR uniqExactIf(output_unit, output_units IS NOT NULL) > 1, NULL, sumIf(output_units, output_units IS NOT NULL)) AS units,
    units / nullIf(sumIf(gpu_hours, output_units IS NOT NULL), 0) AS per_gpu_hour,
    anyIf(per_units, output_units IS NOT NULL) AS scale,
    if(countIf(output_units IS NOT NULL AND cost IS NULL) > 0, NULL, sumIf(cost, output_units IS NOT NULL)) / nullIf(units, 0) * scale AS cost_per_units
FROM job_output_between(from = {from:DateTime64(3, 'UTC')}, to = {to:DateTime64(3, 'UTC')})
GROUP BY team, model_name
ORDER BY team, model_name`

// trendSQL buckets by the period's days (or hours) in its time zone; bucket is a
// constant expression chosen by the period's length.
func trendSQL(bucket string) string {
	return `SELECT ` + bucket + ` AS bucket,
    sum(c.idle_gpu_hours) AS idle_gpu_hours,
    if(countIf(c.priced = 0) > 0 OR uniqExactIf(c.currency, c.priced = 1) > 1, NULL, sum(c.idle_cost)) AS idle_cost,
    if(countIf(c.priced = 0) > 0 OR uniqExactIf(c.currency, c.priced = 1) > 1, NULL, sum(c.cost))      AS cost
FROM chargeback_job_priced AS c
WHERE c.job != '' AND c.hour >= {from:DateTime('UTC')} AND c.hour < {to:DateTime('UTC')}
GROUP BY bucket
ORDER BY bucket`
}

const (
	bucketDay  = `toStartOfDay(c.hour, {tz:String})`
	bucketHour = `toStartOfHour(c.hour)`
)

const utilisationSQL = `SELECT
    toString(c.card) AS card, toHour(c.hour, {tz:String}) AS hour_of_day,
    sum(c.gpu_hours) AS gpu_hours,
    sum(c.sm_active_weighted) / nullIf(sum(c.sm_active_gpu_hours), 0) AS sm_active_mean,
    sum(c.used_gpu_hours) / nullIf(sum(c.used_gpu_hours) + sum(c.idle_gpu_hours), 0) AS active_ratio
FROM chargeback_job_priced AS c
WHERE c.hour >= {from:DateTime('UTC')} AND c.hour < {to:DateTime('UTC')}
GROUP BY card, hour_of_day
ORDER BY card, hour_of_day`

// BuildFor is Build cut to scope (Scoped): the one report every format of a
// scoped export is rendered from.
func BuildFor(ctx context.Context, q store.Querier, period reports.Period, scope Scope) (*Report, error) {
	r, err := Build(ctx, q, period)
	if err != nil {
		return nil, err
	}
	return Scoped(r, scope), nil
}

// query is one of the report's queries: its SQL, the rows it may return (0: no
// limit) and how its rows go into the report.
type query struct {
	name   string
	sql    string
	limit  int
	decode func(b *builder, rows *store.Rows) error
}

// builder is a report being built: the report so far and its period.
type builder struct {
	r      *Report
	period reports.Period
}

// queries are the report's queries. They run together (buildParallel at a time;
// the store gives each its own connection), the longest first (a month's
// failures, then the breakdowns of two periods) so that the shorter ones fill in
// beside them, and are decoded in this order once all have run: unallocated
// capacity reads the currency the totals set.
func queries(period reports.Period) []query {
	bucket, _, _ := trendBuckets(period)
	return []query{
		{"failures", failuresSQL, 0, decodeFailures},
		{"totals and breakdowns", breakdownsSQL, 0, decodeBreakdowns},
		{"output", outputSQL, 0, decodeOutput},
		{"utilisation", utilisationSQL, 0, decodeUtilisation},
		{"idle trend", trendSQL(bucket), 0, decodeTrend},
		{"top waste", topWasteSQL, topWasteRows, decodeTopWaste},
		{"unallocated capacity", unallocatedSQL, 0, decodeUnallocated},
		{"queue wait", queueWaitSQL, 0, decodeQueueWait},
		{"findings", findingsSQL, findingRows, decodeFindings},
		{"fragmentation", fragmentationSQL, 0, decodeFragmentation},
	}
}

// Build reads the fleet's chargeback of period (and of the period before it) from the
// finance views. The views cover the hours the analyzer has refreshed
// (chargeback.Refresh); a period's bounds are applied to whole hours.
func Build(ctx context.Context, q store.Querier, period reports.Period) (*Report, error) {
	if !period.From.Before(period.To) {
		return nil, fmt.Errorf("report %s: empty period", period.Label)
	}
	prev := period.Previous()
	b := &builder{r: &Report{Period: periodInfo(period), Previous: periodInfo(prev)}, period: period}
	p := store.Params{
		"from":      dtParam(period.From),
		"to":        dtParam(period.To),
		"prev_from": dtParam(prev.From),
		"tz":        period.From.Location().String(),
		"limit":     "0",
	}
	qs := queries(period)
	results := make([]*store.Result, len(qs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(buildParallel)
	for i, x := range qs {
		if i == 2 {
			// The capacity page: a history query and a forecast in Go, beside
			// the report's queries.
			g.Go(func() (err error) {
				if b.r.Capacity, err = buildCapacity(gctx, q, period.To); err != nil {
					return fmt.Errorf("report %s: capacity: %w", period.Label, err)
				}
				return nil
			})
		}
		g.Go(func() (err error) {
			pp := maps.Clone(p)
			if x.limit > 0 {
				pp["limit"] = fmt.Sprint(x.limit)
			}
			if results[i], err = q.Query(gctx, x.sql, pp); err != nil {
				return fmt.Errorf("report %s: %s: %w", period.Label, x.name, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	for i, x := range qs {
		rows := store.Read(results[i], x.name)
		err := x.decode(b, rows)
		if err = cmp.Or(rows.Err(), err); err != nil {
			return nil, fmt.Errorf("report %s: %s: %w", period.Label, x.name, err)
		}
	}
	return b.r, nil
}

// figure is a figure of the report, rounded to 6 decimals so that float
// summation order never shows. NULL and NaN are 0: the report's choice (a sum
// over no rows, or a ratio over none, shows as 0 in every format).
func figure(rows *store.Rows, name string) float64 {
	v := rows.Float(name)
	if math.IsNaN(v) {
		return 0
	}
	return round(v)
}

// money is an amount or a ratio that may be unknown: nil for NULL (an unpriced
// hour, mixed currencies), NaN or ±Inf; rounded as figure is.
func money(rows *store.Rows, name string) *float64 {
	v := rows.NullFloat(name)
	if v == nil || math.IsNaN(*v) || math.IsInf(*v, 0) {
		return nil
	}
	return ptr(round(*v))
}

func decodeFailures(b *builder, rows *store.Rows) error {
	for rows.Next() {
		f := Failure{Reason: rows.Str("reason"), Attempts: rows.Int("n"), GPUHours: figure(rows, "gpu_hours"),
			Cost: money(rows, "cost"), FailedRerunCost: money(rows, "failed_rerun_cost")}
		b.r.EndedAttempts = rows.Int("total")
		if b.r.EndedAttempts > 0 {
			f.Rate = round(float64(f.Attempts) / float64(b.r.EndedAttempts))
		}
		if f.Reason != "" {
			b.r.Failures = append(b.r.Failures, f)
		}
	}
	return nil
}

// decodeBreakdowns reads the totals and breakdowns, this period and the previous
// one: one query, one grouping set per breakdown (g tells which), so that the
// view's joins are built once.
func decodeBreakdowns(b *builder, rows *store.Rows) error {
	r := b.r
	setOf := map[int64]int{}
	for i, set := range breakdownSets {
		mask := int64(0)
		for bit, k := range breakdownKeys {
			if !slices.Contains(set, k) {
				mask |= 1 << (len(breakdownKeys) - 1 - bit)
			}
		}
		setOf[mask] = i
	}
	lines := make([]lineSet, len(breakdownSets))
	for rows.Next() {
		g := rows.Int("g")
		set, ok := setOf[g]
		if !ok && rows.Err() == nil {
			return fmt.Errorf("grouping mask %d is no breakdown's", g)
		}
		f, cur := readFigures(rows), rows.Int("cur") == 1
		switch {
		case set == 0 && cur:
			r.Totals.Figures = f
		case set == 0:
			r.PreviousTotals = f
		default:
			lines[set].add(readLineKey(rows, breakdownSets[set]), f, cur)
		}
	}
	r.Currency = r.Totals.Currency
	r.Change = Change{
		GPUHours:     change(&r.Totals.GPUHours, &r.PreviousTotals.GPUHours),
		Cost:         change(r.Totals.Cost, r.PreviousTotals.Cost),
		IdleGPUHours: change(&r.Totals.IdleGPUHours, &r.PreviousTotals.IdleGPUHours),
		IdleCost:     change(r.Totals.IdleCost, r.PreviousTotals.IdleCost),
		EnergyKWh:    change(&r.Totals.EnergyKWh, &r.PreviousTotals.EnergyKWh),
	}
	for i, out := range []*[]Line{&r.Teams, &r.Projects, &r.Cards, &r.Clusters, &r.Models} {
		*out = lines[i+1].lines()
	}
	return nil
}

func decodeFragmentation(b *builder, rows *store.Rows) error {
	for rows.Next() {
		b.r.Fragmentation = append(b.r.Fragmentation, Fragmentation{Cluster: rows.Str("cluster"), Card: rows.Str("card"),
			SampledHours: figure(rows, "sampled_hours"), MeanFreeGPUs: figure(rows, "mean_free_gpus"),
			MeanStrandedGPUs: figure(rows, "mean_stranded_gpus"), StrandedGPUHours: figure(rows, "stranded_gpu_hours"),
			MaxWaiting: rows.Int("max_waiting")})
	}
	return nil
}

func decodeOutput(b *builder, rows *store.Rows) error {
	for rows.Next() {
		b.r.Output = append(b.r.Output, Output{Team: rows.Str("team"), Model: rows.Str("model_name"), Unit: rows.Str("unit"),
			Jobs: rows.Int("jobs"), ReportingJobs: rows.Int("reporting"), GPUHours: figure(rows, "all_gpu_hours"),
			Units: money(rows, "units"), UnitsPerGPUHour: money(rows, "per_gpu_hour"), PerUnits: rows.Int("scale"),
			CostPerUnits: money(rows, "cost_per_units")})
	}
	return nil
}

func decodeUtilisation(b *builder, rows *store.Rows) error {
	for rows.Next() {
		b.r.Utilisation = append(b.r.Utilisation, UtilCell{Card: rows.Str("card"), HourOfDay: int(rows.Int("hour_of_day")),
			GPUHours: figure(rows, "gpu_hours"), SMActiveMean: money(rows, "sm_active_mean"), ActiveRatio: money(rows, "active_ratio")})
	}
	return nil
}

// decodeTrend lays the idle trend query's rows out as one point per day of the
// period (per hour of a one-day period), zero where nothing was held.
func decodeTrend(b *builder, rows *store.Rows) error {
	loc := b.period.From.Location()
	_, step, layout := trendBuckets(b.period)
	got := map[int64]TrendPoint{}
	for rows.Next() {
		got[rows.Time("bucket").Unix()] = TrendPoint{IdleGPUHours: figure(rows, "idle_gpu_hours"),
			IdleCost: money(rows, "idle_cost"), Cost: money(rows, "cost")}
	}
	for t := b.period.From; t.Before(b.period.To); t = step(t) {
		pt, ok := got[t.Unix()]
		if !ok {
			pt = TrendPoint{IdleCost: ptr(0), Cost: ptr(0)}
		}
		pt.Start, pt.Label = t.In(loc), t.In(loc).Format(layout)
		b.r.IdleTrend = append(b.r.IdleTrend, pt)
	}
	return nil
}

func decodeTopWaste(b *builder, rows *store.Rows) error {
	for rows.Next() {
		w := Waste{Job: rows.Str("job"), Team: rows.Str("team"), Project: rows.Str("project"), Pool: rows.Str("pool"),
			Card: rows.Str("card"), GPUHours: figure(rows, "gpu_hours"), IdleGPUHours: figure(rows, "idle_gpu_hours"),
			IdleCost: money(rows, "idle_cost"), Currency: rows.Str("currency")}
		if m := figure(rows, "used_gpu_hours") + w.IdleGPUHours; m > 0 {
			w.IdleRatio = round(w.IdleGPUHours / m)
		}
		b.r.TopWaste = append(b.r.TopWaste, w)
	}
	return nil
}

// decodeUnallocated reads the capacity no job held, by card; its cost is in the
// totals only when every card with such hours is priced in the report's currency.
func decodeUnallocated(b *builder, rows *store.Rows) error {
	r := b.r
	unallocCost, allPriced := 0.0, true
	for rows.Next() {
		u := Unallocated{Card: rows.Str("card"), Currency: rows.Str("currency"),
			CapacityGPUHours: figure(rows, "capacity_gpu_hours"), AllocatedGPUHours: figure(rows, "allocated_gpu_hours"),
			UnallocatedGPUHours: figure(rows, "unallocated_gpu_hours"), UnallocatedCost: money(rows, "unallocated_cost")}
		r.Unallocated = append(r.Unallocated, u)
		r.Totals.UnallocatedGPUHours += u.UnallocatedGPUHours
		if u.UnallocatedGPUHours > 0 {
			if u.UnallocatedCost == nil || u.Currency != r.Currency {
				allPriced = false
			} else {
				unallocCost += *u.UnallocatedCost
			}
		}
	}
	r.Totals.UnallocatedGPUHours = round(r.Totals.UnallocatedGPUHours)
	if allPriced {
		r.Totals.UnallocatedCost = ptr(round(unallocCost))
	}
	return nil
}

func decodeQueueWait(b *builder, rows *store.Rows) error {
	for rows.Next() {
		b.r.QueueWait = append(b.r.QueueWait, QueueWait{Team: rows.Str("team"), Pool: rows.Str("pool"), Jobs: rows.Int("jobs"),
			P50Hours: figure(rows, "p50_hours"), P95Hours: figure(rows, "p95_hours"), QueuedGPUHours: figure(rows, "queued_gpu_hours")})
	}
	return nil
}

func decodeFindings(b *builder, rows *store.Rows) error {
	for rows.Next() {
		b.r.Findings = append(b.r.Findings, Finding{
			Kind: rows.Str("kind"), Severity: rows.Str("severity"), Job: rows.Str("job"), Team: rows.Str("team"),
			Project: rows.Str("project"), Pool: rows.Str("pool"), Card: rows.Str("card"),
			ID: rows.Str("id"), Episode: rows.Int("episode"), State: rows.Str("state"),
			GPUUUIDs: rows.Strs("gpu_uuids"), GPUs: figure(rows, "gpus"),
			Since: rows.Time("since"), FirstSeen: rows.Time("first_seen"), LastSeen: rows.Time("last_seen"),
			ResolvedAt:    rows.NullTime("resolved_at"),
			WasteGPUHours: figure(rows, "waste_gpu_hours"), WasteCost: figure(rows, "waste_cost"), Currency: rows.Str("currency"),
			PeriodWasteGPUHours: figure(rows, "period_waste_gpu_hours"), PeriodWasteCost: figure(rows, "period_waste_cost"),
			Recommendation: rows.Str("recommendation"),
		})
	}
	return nil
}

// trendBuckets gives the idle trend's bucket expression, step and label layout:
// days, or hours for a one-day period.
func trendBuckets(period reports.Period) (string, func(time.Time) time.Time, string) {
	if period.To.Sub(period.From) <= 25*time.Hour {
		return bucketHour, func(t time.Time) time.Time { return t.Add(time.Hour) }, "15:04"
	}
	return bucketDay, func(t time.Time) time.Time { return t.AddDate(0, 0, 1) }, "01-02"
}

func periodInfo(p reports.Period) PeriodInfo {
	return PeriodInfo{Label: p.Label, From: p.From, To: p.To, TimeZone: p.From.Location().String()}
}

// readFigures reads the chargeback figures of a row of figuresSQL.
func readFigures(rows *store.Rows) Figures {
	return Figures{
		Jobs: rows.Int("jobs"), GPUHours: figure(rows, "gpu_hours"), UsedGPUHours: figure(rows, "used_gpu_hours"),
		IdleGPUHours: figure(rows, "idle_gpu_hours"), UnmeasuredGPUHours: figure(rows, "unmeasured_gpu_hours"),
		UnpricedGPUHours: figure(rows, "unpriced_gpu_hours"), Cost: money(rows, "cost"), IdleCost: money(rows, "idle_cost"),
		FailedRerunGPUHours: figure(rows, "failed_rerun_gpu_hours"), FailedRerunCost: money(rows, "failed_rerun_cost"),
		QueueWaitHours: figure(rows, "queue_wait_hours"), EnergyKWh: figure(rows, "energy_kwh"), Currency: rows.Str("currency"),
		QueueWaitGPUHours: figure(rows, "queue_wait_gpu_hours"), QueueWaitCost: money(rows, "queue_wait_cost"),
		EnergyCost: money(rows, "energy_cost"),
	}
}

// lineKey is a breakdown's key: the set's keys of the row, the others empty.
type lineKey struct{ team, project, card, cluster, model string }

func readLineKey(rows *store.Rows, set []string) lineKey {
	var k lineKey
	for _, name := range set {
		v := rows.Str(name)
		switch name {
		case "team":
			k.team = v
		case "project":
			k.project = v
		case "card":
			k.card = v
		case "cluster":
			k.cluster = v
		case "model_name":
			k.model = v
		}
	}
	return k
}

// lineSet joins each key's current and previous figures of one breakdown, in
// the order the keys came.
type lineSet struct {
	byKey map[lineKey]*Line
	order []lineKey
}

func (s *lineSet) add(k lineKey, f Figures, cur bool) {
	l, ok := s.byKey[k]
	if !ok {
		if s.byKey == nil {
			s.byKey = map[lineKey]*Line{}
		}
		l = &Line{Team: k.team, Project: k.project, Card: k.card, Cluster: k.cluster, Model: k.model, Figures: Figures{Cost: ptr(0), IdleCost: ptr(0), FailedRerunCost: ptr(0)}}
		s.byKey[k] = l
		s.order = append(s.order, k)
	}
	if cur {
		l.Figures = f
	} else {
		l.PreviousGPUHours, l.PreviousCost = f.GPUHours, f.Cost
	}
}

// lines lists the breakdown, keys only in the previous period too (with zero
// figures now, so that nothing that stopped is missed), by cost, then GPU-hours.
func (s *lineSet) lines() []Line {
	out := make([]Line, 0, len(s.order))
	for _, k := range s.order {
		l := s.byKey[k]
		if l.PreviousCost == nil && l.PreviousGPUHours == 0 {
			l.PreviousCost = ptr(0)
		}
		l.CostChange = change(l.Cost, l.PreviousCost)
		out = append(out, *l)
	}
	slices.SortStableFunc(out, func(a, b Line) int {
		if c := cmp.Compare(val(b.Cost), val(a.Cost)); c != 0 {
			return c
		}
		if c := cmp.Compare(b.GPUHours, a.GPUHours); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.Team, b.Team), cmp.Compare(a.Project, b.Project), cmp.Compare(a.Card, b.Card),
			cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.Model, b.Model))
	})
	return out
}

func dtParam(t time.Time) string { return t.UTC().Format(time.DateTime) }

func round(x float64) float64 {
	r := math.Round(x*1e6) / 1e6
	if r == 0 {
		return 0 // no -0
	}
	return r
}

func ptr(x float64) *float64 { return &x }

func val(x *float64) float64 {
	if x == nil {
		return math.Inf(1) // unknown cost sorts first: it needs a price
	}
	return *x
}

// change is (now − before) / before, nil when before is zero or either is unknown.
func change(now, before *float64) *float64 {
	if now == nil || before == nil || *before == 0 {
		return nil
	}
	return ptr(math.Round((*now-*before) / *before * 1e4) / 1e4)
}
