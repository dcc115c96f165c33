package billing

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/gpupool/gpupool/analyzer/chargeback"
	"github.com/gpupool/gpupool/reports"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
)

// Querier runs read-only SQL; store.Store implements it.
type Querier interface {
	Query(ctx context.Context, sql string, params store.Params) (*store.Result, error)
}

var _ Querier = store.Store(nil)

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

// splitSets splits breakdownsSQL's rows into one result per grouping set, each
// with cur, the set's keys and the figures as columns.
func splitSets(res *store.Result) ([]*store.Result, error) {
	gi := res.Index("g")
	if gi < 0 {
		return nil, fmt.Errorf("no column g")
	}
	byMask := map[int64]int{}
	out := make([]*store.Result, len(breakdownSets))
	for i, set := range breakdownSets {
		mask := int64(0)
		for b, k := range breakdownKeys {
			if !slices.Contains(set, k) {
				mask |= 1 << (len(breakdownKeys) - 1 - b)
			}
		}
		byMask[mask] = i
		sub := &store.Result{}
		for _, c := range res.Columns {
			if c.Name == "g" || (slices.Contains(breakdownKeys, c.Name) && !slices.Contains(set, c.Name)) {
				continue
			}
			sub.Columns = append(sub.Columns, c)
		}
		out[i] = sub
	}
	for i, row := range res.Rows {
		g, err := res.Int(i, "g")
		if err != nil {
			return nil, err
		}
		set, ok := byMask[g]
		if !ok {
			return nil, fmt.Errorf("row %d: grouping mask %d is no breakdown's", i, g)
		}
		var cells []any
		for j, c := range res.Columns {
			if out[set].Index(c.Name) >= 0 {
				cells = append(cells, row[j])
			}
		}
		out[set].Rows = append(out[set].Rows, cells)
	}
	return out, nil
}

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
    FROM findings
    WHERE updated_at >= {from:DateTime64(3, 'UTC')}
    GROUP BY id, episode
)
WHERE least(since_, first_seen_) < {to:DateTime64(3, 'UTC')}
  AND ifNull(resolved_at_, last_seen_) >= {from:DateTime64(3, 'UTC')}
ORDER BY period_waste_gpu_hours DESC, waste_gpu_hours DESC, id, episode
LIMIT {limit:UInt32}`

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
func BuildFor(ctx context.Context, q Querier, period reports.Period, scope Scope) (*Report, error) {
	r, err := Build(ctx, q, period)
	if err != nil {
		return nil, err
	}
	return Scoped(r, scope), nil
}

// Build reads the fleet's chargeback of period (and of the period before it) from the
// finance views. The views cover the hours the analyzer has refreshed
// (chargeback.Refresh); a period's bounds are applied to whole hours.
func Build(ctx context.Context, q Querier, period reports.Period) (*Report, error) {
	if !period.From.Before(period.To) {
		return nil, fmt.Errorf("report %s: empty period", period.Label)
	}
	prev := period.Previous()
	loc := period.From.Location()
	r := &Report{Period: periodInfo(period), Previous: periodInfo(prev)}
	p := store.Params{
		"from":      dtParam(period.From),
		"to":        dtParam(period.To),
		"prev_from": dtParam(prev.From),
		"tz":        loc.String(),
		"limit":     "0",
	}
	// The report's queries are independent of each other: they run together
	// (buildParallel at a time; the store gives each its own connection), the
	// capacity page's beside them, and their results are read below in order.
	query := func(ctx context.Context, what, sql string, limit int) (*store.Result, error) {
		pp := p
		if limit > 0 {
			pp = store.Params{}
			for k, v := range p {
				pp[k] = v
			}
			pp["limit"] = fmt.Sprint(limit)
		}
		res, err := q.Query(ctx, sql, pp)
		if err != nil {
			return nil, fmt.Errorf("report %s: %s: %w", period.Label, what, err)
		}
		return res, nil
	}
	bucket, _, _ := trendBuckets(period)
	queries := []struct {
		what, sql string
		limit     int
	}{
		// The longest first (a month's failures, then the breakdowns of two
		// periods), so that the shorter ones fill in beside them.
		{"failures", failuresSQL, 0}, {"totals and breakdowns", breakdownsSQL, 0},
		{"output", outputSQL, 0}, {"utilisation", utilisationSQL, 0}, {"idle trend", trendSQL(bucket), 0},
		{"top waste", topWasteSQL, topWasteRows}, {"unallocated capacity", unallocatedSQL, 0},
		{"queue wait", queueWaitSQL, 0}, {"findings", findingsSQL, findingRows},
	}
	results := make(map[string]*store.Result, len(queries))
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(buildParallel)
	for i, x := range queries {
		if i == 2 {
			// The capacity page: a history query and a forecast in Go.
			g.Go(func() error {
				var err error
				if r.Capacity, err = buildCapacity(gctx, q, period.To); err != nil {
					return fmt.Errorf("report %s: capacity: %w", period.Label, err)
				}
				return nil
			})
		}
		g.Go(func() error {
			res, err := query(gctx, x.what, x.sql, x.limit)
			if err != nil {
				return err
			}
			mu.Lock()
			results[x.what] = res
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}

	// Totals and breakdowns, this period and the previous one: one query, one
	// grouping set per breakdown, so that the view's joins are built once.
	res := results["totals and breakdowns"]
	sets, err := splitSets(res)
	if err != nil {
		return nil, fmt.Errorf("report %s: totals and breakdowns: %w", period.Label, err)
	}
	res = sets[0]
	for i := range res.Rows {
		f, err := scanFigures(res, i)
		if err != nil {
			return nil, fmt.Errorf("report %s: totals: %w", period.Label, err)
		}
		if cur, _ := res.Int(i, "cur"); cur == 1 {
			r.Totals.Figures = f
		} else {
			r.PreviousTotals = f
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
	for i, b := range []struct {
		what string
		out  *[]Line
	}{{"teams", &r.Teams}, {"projects", &r.Projects}, {"cards", &r.Cards}, {"clusters", &r.Clusters}, {"models", &r.Models}} {
		if *b.out, err = scanLines(sets[i+1]); err != nil {
			return nil, fmt.Errorf("report %s: %s: %w", period.Label, b.what, err)
		}
	}

	res = results["unallocated capacity"]
	unallocCost, allPriced := 0.0, true
	for i := range res.Rows {
		var u Unallocated
		sc := scanner{res: res, row: i}
		u.Card, u.Currency = sc.str("card"), sc.str("currency")
		u.CapacityGPUHours, u.AllocatedGPUHours = sc.num("capacity_gpu_hours"), sc.num("allocated_gpu_hours")
		u.UnallocatedGPUHours, u.UnallocatedCost = sc.num("unallocated_gpu_hours"), sc.opt("unallocated_cost")
		if sc.err != nil {
			return nil, fmt.Errorf("report %s: unallocated capacity: %w", period.Label, sc.err)
		}
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

	res = results["top waste"]
	for i := range res.Rows {
		var w Waste
		sc := scanner{res: res, row: i}
		w.Job, w.Team, w.Project, w.Pool, w.Card = sc.str("job"), sc.str("team"), sc.str("project"), sc.str("pool"), sc.str("card")
		w.GPUHours, w.IdleGPUHours, w.IdleCost, w.Currency = sc.num("gpu_hours"), sc.num("idle_gpu_hours"), sc.opt("idle_cost"), sc.str("currency")
		if m := sc.num("used_gpu_hours") + w.IdleGPUHours; m > 0 {
			w.IdleRatio = round(w.IdleGPUHours / m)
		}
		if sc.err != nil {
			return nil, fmt.Errorf("report %s: top waste: %w", period.Label, sc.err)
		}
		r.TopWaste = append(r.TopWaste, w)
	}

	res = results["findings"]
	for i := range res.Rows {
		var f Finding
		sc := scanner{res: res, row: i}
		f.Kind, f.Severity, f.Job, f.Team = sc.str("kind"), sc.str("severity"), sc.str("job"), sc.str("team")
		f.Project, f.Pool, f.Card = sc.str("project"), sc.str("pool"), sc.str("card")
		f.ID, f.Episode, f.State = sc.str("id"), int64(sc.num("episode")), sc.str("state")
		f.GPUUUIDs, f.GPUs = sc.strs("gpu_uuids"), sc.num("gpus")
		f.Since, f.FirstSeen, f.LastSeen = sc.time("since"), sc.time("first_seen"), sc.time("last_seen")
		f.ResolvedAt = sc.optTime("resolved_at")
		f.WasteGPUHours, f.WasteCost, f.Currency = sc.num("waste_gpu_hours"), sc.num("waste_cost"), sc.str("currency")
		f.PeriodWasteGPUHours, f.PeriodWasteCost = sc.num("period_waste_gpu_hours"), sc.num("period_waste_cost")
		f.Recommendation = sc.str("recommendation")
		if sc.err != nil {
			return nil, fmt.Errorf("report %s: findings: %w", period.Label, sc.err)
		}
		r.Findings = append(r.Findings, f)
	}

	res = results["queue wait"]
	for i := range res.Rows {
		var w QueueWait
		sc := scanner{res: res, row: i}
		w.Team, w.Pool, w.Jobs = sc.str("team"), sc.str("pool"), int64(sc.num("jobs"))
		w.P50Hours, w.P95Hours, w.QueuedGPUHours = sc.num("p50_hours"), sc.num("p95_hours"), sc.num("queued_gpu_hours")
		if sc.err != nil {
			return nil, fmt.Errorf("report %s: queue wait: %w", period.Label, sc.err)
		}
		r.QueueWait = append(r.QueueWait, w)
	}

	res = results["failures"]
	for i := range res.Rows {
		sc := scanner{res: res, row: i}
		f := Failure{Reason: sc.str("reason"), Attempts: int64(sc.num("n")), GPUHours: sc.num("gpu_hours"),
			Cost: sc.opt("cost"), FailedRerunCost: sc.opt("failed_rerun_cost")}
		r.EndedAttempts = int64(sc.num("total"))
		if sc.err != nil {
			return nil, fmt.Errorf("report %s: failures: %w", period.Label, sc.err)
		}
		if r.EndedAttempts > 0 {
			f.Rate = round(float64(f.Attempts) / float64(r.EndedAttempts))
		}
		if f.Reason != "" {
			r.Failures = append(r.Failures, f)
		}
	}

	res = results["output"]
	for i := range res.Rows {
		sc := scanner{res: res, row: i}
		o := Output{Team: sc.str("team"), Model: sc.str("model_name"), Unit: sc.str("unit"), Jobs: int64(sc.num("jobs")),
			ReportingJobs: int64(sc.num("reporting")), GPUHours: sc.num("all_gpu_hours"), Units: sc.opt("units"),
			UnitsPerGPUHour: sc.opt("per_gpu_hour"), PerUnits: int64(sc.num("scale")), CostPerUnits: sc.opt("cost_per_units")}
		if sc.err != nil {
			return nil, fmt.Errorf("report %s: output: %w", period.Label, sc.err)
		}
		r.Output = append(r.Output, o)
	}

	if r.IdleTrend, err = buildTrend(results["idle trend"], period); err != nil {
		return nil, err
	}

	res = results["utilisation"]
	for i := range res.Rows {
		var u UtilCell
		sc := scanner{res: res, row: i}
		u.Card, u.HourOfDay, u.GPUHours = sc.str("card"), int(sc.num("hour_of_day")), sc.num("gpu_hours")
		u.SMActiveMean, u.ActiveRatio = sc.opt("sm_active_mean"), sc.opt("active_ratio")
		if sc.err != nil {
			return nil, fmt.Errorf("report %s: utilisation: %w", period.Label, sc.err)
		}
		r.Utilisation = append(r.Utilisation, u)
	}
	return r, nil
}

// trendBuckets gives the idle trend's bucket expression, step and label layout:
// days, or hours for a one-day period.
func trendBuckets(period reports.Period) (string, func(time.Time) time.Time, string) {
	if period.To.Sub(period.From) <= 25*time.Hour {
		return bucketHour, func(t time.Time) time.Time { return t.Add(time.Hour) }, "15:04"
	}
	return bucketDay, func(t time.Time) time.Time { return t.AddDate(0, 0, 1) }, "01-02"
}

// buildTrend lays the idle trend query's rows out as one point per day of the
// period (per hour of a one-day period), zero where nothing was held.
func buildTrend(res *store.Result, period reports.Period) ([]TrendPoint, error) {
	loc := period.From.Location()
	_, step, layout := trendBuckets(period)
	got := map[int64]TrendPoint{}
	for i := range res.Rows {
		sc := scanner{res: res, row: i}
		t := sc.time("bucket")
		pt := TrendPoint{IdleGPUHours: sc.num("idle_gpu_hours"), IdleCost: sc.opt("idle_cost"), Cost: sc.opt("cost")}
		if sc.err != nil {
			return nil, fmt.Errorf("report %s: idle trend: %w", period.Label, sc.err)
		}
		got[t.Unix()] = pt
	}
	var out []TrendPoint
	for t := period.From; t.Before(period.To); t = step(t) {
		pt, ok := got[t.Unix()]
		if !ok {
			pt = TrendPoint{IdleCost: ptr(0), Cost: ptr(0)}
		}
		pt.Start, pt.Label = t.In(loc), t.In(loc).Format(layout)
		out = append(out, pt)
	}
	return out, nil
}

func periodInfo(p reports.Period) PeriodInfo {
	return PeriodInfo{Label: p.Label, From: p.From, To: p.To, TimeZone: p.From.Location().String()}
}

func scanFigures(res *store.Result, i int) (Figures, error) {
	sc := scanner{res: res, row: i}
	f := Figures{
		Jobs: int64(sc.num("jobs")), GPUHours: sc.num("gpu_hours"), UsedGPUHours: sc.num("used_gpu_hours"),
		IdleGPUHours: sc.num("idle_gpu_hours"), UnmeasuredGPUHours: sc.num("unmeasured_gpu_hours"),
		UnpricedGPUHours: sc.num("unpriced_gpu_hours"), Cost: sc.opt("cost"), IdleCost: sc.opt("idle_cost"),
		FailedRerunGPUHours: sc.num("failed_rerun_gpu_hours"), FailedRerunCost: sc.opt("failed_rerun_cost"),
		QueueWaitHours: sc.num("queue_wait_hours"), EnergyKWh: sc.num("energy_kwh"), Currency: sc.str("currency"),
		QueueWaitGPUHours: sc.num("queue_wait_gpu_hours"), QueueWaitCost: sc.opt("queue_wait_cost"),
		EnergyCost: sc.opt("energy_cost"),
	}
	return f, sc.err
}

// scanLines joins each key's current and previous figures; keys only in the
// previous period are listed too (with zero figures now), so nothing that
// stopped is missed.
func scanLines(res *store.Result) ([]Line, error) {
	type key struct{ team, project, card, cluster, model string }
	byKey := map[key]*Line{}
	var order []key
	for i := range res.Rows {
		f, err := scanFigures(res, i)
		if err != nil {
			return nil, err
		}
		sc := scanner{res: res, row: i}
		k := key{}
		if res.Index("team") >= 0 {
			k.team = sc.str("team")
		}
		if res.Index("project") >= 0 {
			k.project = sc.str("project")
		}
		if res.Index("card") >= 0 {
			k.card = sc.str("card")
		}
		if res.Index("cluster") >= 0 {
			k.cluster = sc.str("cluster")
		}
		if res.Index("model_name") >= 0 {
			k.model = sc.str("model_name")
		}
		l, ok := byKey[k]
		if !ok {
			l = &Line{Team: k.team, Project: k.project, Card: k.card, Cluster: k.cluster, Model: k.model, Figures: Figures{Cost: ptr(0), IdleCost: ptr(0), FailedRerunCost: ptr(0)}}
			byKey[k] = l
			order = append(order, k)
		}
		if cur, _ := res.Int(i, "cur"); cur == 1 {
			l.Figures = f
		} else {
			l.PreviousGPUHours, l.PreviousCost = f.GPUHours, f.Cost
		}
	}
	out := make([]Line, 0, len(order))
	for _, k := range order {
		l := byKey[k]
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
	return out, nil
}

// scanner reads cells of one row, keeping the first error; figures are rounded
// to 6 decimals so that float summation order never shows in a report.
type scanner struct {
	res *store.Result
	row int
	err error
}

func (s *scanner) str(name string) string {
	if s.err != nil {
		return ""
	}
	v, err := s.res.String(s.row, name)
	s.err = err
	return v
}

func (s *scanner) num(name string) float64 {
	if s.err != nil {
		return 0
	}
	v, err := s.res.Float(s.row, name)
	s.err = err
	if math.IsNaN(v) {
		return 0
	}
	return round(v)
}

func (s *scanner) opt(name string) *float64 {
	if s.err != nil {
		return nil
	}
	v, err := s.res.Float(s.row, name)
	if s.err = err; err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return ptr(round(v))
}

func (s *scanner) time(name string) time.Time {
	if s.err != nil {
		return time.Time{}
	}
	i := s.res.Index(name)
	if i < 0 {
		s.err = fmt.Errorf("no column %q", name)
		return time.Time{}
	}
	t, ok := s.res.Rows[s.row][i].(time.Time)
	if !ok {
		s.err = fmt.Errorf("column %q is %T, not a time", name, s.res.Rows[s.row][i])
	}
	return t.UTC()
}

// optTime reads a Nullable time: nil for NULL.
func (s *scanner) optTime(name string) *time.Time {
	if s.err != nil {
		return nil
	}
	i := s.res.Index(name)
	if i < 0 {
		s.err = fmt.Errorf("no column %q", name)
		return nil
	}
	if s.res.Rows[s.row][i] == nil {
		return nil
	}
	t := s.time(name)
	return &t
}

// strs reads an Array(String); never nil, so that JSON shows [] rather than null.
func (s *scanner) strs(name string) []string {
	if s.err != nil {
		return []string{}
	}
	i := s.res.Index(name)
	if i < 0 {
		s.err = fmt.Errorf("no column %q", name)
		return []string{}
	}
	arr, ok := s.res.Rows[s.row][i].([]any)
	if !ok && s.res.Rows[s.row][i] != nil {
		s.err = fmt.Errorf("column %q is %T, not an array", name, s.res.Rows[s.row][i])
		return []string{}
	}
	out := make([]string, 0, len(arr))
	for _, v := range arr {
		out = append(out, store.FormatValue(v))
	}
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
