package demo

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/gpupool/gpupool/analyzer/chargeback"
	"github.com/gpupool/gpupool/internal/summary"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
)

// Effect is one run of the demo's fleet measured from what the store holds — the
// GPU samples and the job events ingest stored, through chargeback — not from the
// simulator's ground truth.
type Effect struct {
	Enforce bool
	// GPU-hours of capacity (every card's, a MIG instance its share), held by
	// jobs, held while the GPU was measured and not active, and goodput: held
	// while active (GPUHours − IdleGPUHours).
	CapacityGPUh, AllocatedGPUh, IdleGPUh, GoodputGPUh float64
	// Utilisation is allocated / capacity; Effective is goodput / capacity.
	Utilisation, Effective float64
	// Waits, submit to start, of the attempts submitted in the run that no
	// scheduler requeued (new jobs and reruns of failed ones; one still queued at
	// the end counts with its wait so far), and of the requeued attempts apart.
	Waiting, Requeued                      int
	WaitMean, WaitP50, WaitP95, RequeueP95 time.Duration
	// Actions are the scheduler's decisions, by decision and outcome.
	Actions map[string]int
}

// measure reads the run of [from, to] back from st.
func measure(ctx context.Context, st store.Store, from, to time.Time) (Effect, error) {
	var e Effect
	caps, err := chargeback.ComputeUnallocated(ctx, st, from, to)
	if err != nil {
		return e, fmt.Errorf("demo: measure capacity: %w", err)
	}
	for _, c := range caps {
		e.CapacityGPUh += c.CapacityGPUHours
	}
	rows, err := chargeback.Compute(ctx, st, from, to)
	if err != nil {
		return e, fmt.Errorf("demo: measure allocation: %w", err)
	}
	for _, r := range rows {
		e.AllocatedGPUh += r.GPUHours
		e.IdleGPUh += r.IdleGPUHours
	}
	e.GoodputGPUh = e.AllocatedGPUh - e.IdleGPUh
	if e.CapacityGPUh > 0 {
		e.Utilisation, e.Effective = e.AllocatedGPUh/e.CapacityGPUh, e.GoodputGPUh/e.CapacityGPUh
	}
	waiting, requeued, err := waits(ctx, st, from, to)
	if err != nil {
		return e, err
	}
	e.Waiting, e.Requeued = len(waiting), len(requeued)
	e.WaitP50, e.WaitP95, e.RequeueP95 = quantile(waiting, 0.5), quantile(waiting, 0.95), quantile(requeued, 0.95)
	if len(waiting) > 0 {
		var sum time.Duration
		for _, w := range waiting {
			sum += w
		}
		e.WaitMean = sum / time.Duration(len(waiting))
	}
	return e, nil
}

// waits reads each attempt's submit-to-start wait from the job events: attempts
// submitted in (from, to], hand-started processes left out (they never wait),
// split by whether a requeue event says a scheduler requeued them.
func waits(ctx context.Context, st store.Store, from, to time.Time) (waiting, requeued []time.Duration, err error) {
	db := st.Database()
	q := `SELECT job,
       toUnixTimestamp64Milli(minIf(ts, event = 'submit')) AS submit_ms,
       countIf(event = 'start') > 0 AS started,
       toUnixTimestamp64Milli(minIf(ts, event = 'start')) AS start_ms,
       countIf(event = 'requeue') > 0 AS requeued
FROM ` + db + `.job_events
WHERE source != {process:String}
GROUP BY job
HAVING countIf(event = 'submit') > 0 AND submit_ms > {from:Int64} AND submit_ms <= {to:Int64}
ORDER BY job`
	res, err := st.Query(ctx, q, store.Params{"process": schemas.SourceProcess, "from": strconv.FormatInt(from.UnixMilli(), 10), "to": strconv.FormatInt(to.UnixMilli(), 10)})
	if err != nil {
		return nil, nil, fmt.Errorf("demo: measure queue waits: %w", err)
	}
	rows := store.Read(res, "demo: queue waits")
	for rows.Next() {
		submit, start := rows.Int("submit_ms"), rows.Int("start_ms")
		stop := to.UnixMilli()
		if rows.Int("started") > 0 {
			stop = start
		}
		w := time.Duration(max(stop-submit, 0)) * time.Millisecond
		if rows.Int("requeued") > 0 {
			requeued = append(requeued, w)
		} else {
			waiting = append(waiting, w)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("demo: measure queue waits: %w", err)
	}
	return waiting, requeued, nil
}

// quantile is the nearest-rank quantile of xs (0 when empty).
func quantile(xs []time.Duration, q float64) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// effectSections are the tables of the two runs: capacity use and actions,
// then waits (one table was 220 columns wide).
func effectSections(runs ...Effect) []summary.Section {
	res := &store.Result{Columns: []store.ColumnMeta{
		{Name: "enforcement", Type: "String"}, {Name: "utilisation_pct", Type: "Float64"}, {Name: "effective_pct", Type: "Float64"},
		{Name: "goodput_gpu_hours", Type: "Float64"}, {Name: "idle_gpu_hours", Type: "Float64"},
		{Name: "waiting_jobs", Type: "UInt64"}, {Name: "wait_mean_min", Type: "Float64"}, {Name: "wait_p50_min", Type: "Float64"}, {Name: "wait_p95_min", Type: "Float64"},
		{Name: "requeued", Type: "UInt64"}, {Name: "requeued_wait_p95_min", Type: "Float64"},
		{Name: "admitted", Type: "UInt64"}, {Name: "quota_reclaims", Type: "UInt64"},
		{Name: "notices", Type: "UInt64"}, {Name: "reclaims", Type: "UInt64"}, {Name: "kills", Type: "UInt64"},
	}}
	r1 := func(x float64) float64 { return math.Round(x*10) / 10 }
	for _, e := range runs {
		mode := "off"
		if e.Enforce {
			mode = "on"
		}
		res.Rows = append(res.Rows, []any{
			mode, r1(100 * e.Utilisation), r1(100 * e.Effective), r1(e.GoodputGPUh), r1(e.IdleGPUh),
			uint64(e.Waiting), r1(e.WaitMean.Minutes()), r1(e.WaitP50.Minutes()), r1(e.WaitP95.Minutes()), uint64(e.Requeued), r1(e.RequeueP95.Minutes()),
			uint64(e.Actions["admit ok"]), uint64(e.Actions["quota-reclaim ok"]),
			uint64(e.Actions["notify ok"]), uint64(e.Actions["reclaim ok"]), uint64(e.Actions["kill ok"]),
		})
	}
	return []summary.Section{
		{
			Title: "Enforcement, measured from the store (policies off, on): effective = goodput / capacity; goodput = GPU-hours held while active; " +
				"quota_reclaims = borrowed GPUs taken back",
			Table: columns(res, "enforcement", "utilisation_pct", "effective_pct", "goodput_gpu_hours", "idle_gpu_hours",
				"admitted", "quota_reclaims", "notices", "reclaims", "kills"),
		},
		{
			Title: "Enforcement, measured: wait (min), submit to start, of jobs submitted in the run that waited for the scheduler " +
				"(not hand-started; still queued: wait so far); requeued apart",
			Table: columns(res, "enforcement", "waiting_jobs", "wait_mean_min", "wait_p50_min", "wait_p95_min", "requeued", "requeued_wait_p95_min"),
		},
	}
}
