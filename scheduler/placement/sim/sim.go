package sim

import (
	"container/heap"
	"fmt"
	"slices"
	"time"

	"github.com/gpupool/gpupool/scheduler/placement"
)

// Strategy is an admission strategy the simulator compares.
type Strategy string

// Strategies, in the order tables list them.
const (
	Counting     Strategy = "counting"
	BestEffort   Strategy = "best-effort-fifo"
	Strict       Strategy = "strict-fifo"
	Backfill     Strategy = "backfill"
	Conservative Strategy = "conservative-backfill"
)

// Strategies are the four the issue compares.
var Strategies = []Strategy{Counting, BestEffort, Strict, Backfill}

// Epoch is simulated time zero.
var Epoch = time.Date(2025, 6, 2, 0, 0, 0, 0, time.UTC)

// Large is the size from which a job counts as large in Result.MaxWaitLarge.
const Large = 8

// Result is one strategy's week.
type Result struct {
	Strategy Strategy
	Jobs     int
	// Utilisation is allocated GPU-time over capacity (GPUs × horizon): GPUs
	// held by running jobs, useful or not.
	Utilisation float64
	// EffectiveUtilisation counts only runs that completed inside the horizon:
	// GPU-time of a run cut off by the horizon (or killed) is not useful work yet.
	EffectiveUtilisation float64
	// Waits are from submission to start; a job not started by the end counts
	// the time it has waited so far.
	P50Wait, P95Wait, MaxWait time.Duration
	// MaxWaitLarge is the longest wait of a job of ≥ Large GPUs.
	MaxWaitLarge time.Duration
	// NeverStarted are jobs submitted but not started by the end;
	// LargeNeverStarted those of ≥ Large GPUs.
	NeverStarted, LargeNeverStarted int
	// Passes is scheduling passes run; ReservationBroken counts reserved jobs
	// that started later than their first reservation (must be 0).
	Passes, ReservationBroken int
	// Waits lists each job's wait, by job index.
	Waits []time.Duration
}

type jobState struct {
	*Job
	i       int
	started bool
	start   time.Duration
	// reserved is the first reservation's hold (its start, unless slack
	// relaxes it), -1 if none; prior the last pass's reservation.
	reserved time.Duration
	prior    *placement.Reservation
	// cluster is the counting strategy's admission; -1 before.
	cluster int
	comp    placement.Compiled
}

// Run simulates jobs on c's fleet under strategy s.
func Run(c Config, jobs []Job, s Strategy) (Result, error) {
	if err := c.Validate(); err != nil {
		return Result{}, err
	}
	st, err := placement.NewState(c.Fleet())
	if err != nil {
		return Result{}, err
	}
	r := &runner{c: c, s: s, st: st, res: Result{Strategy: s, Jobs: len(jobs)}}
	r.free = make([]int, c.Clusters)
	for i := range r.free {
		r.free[i] = c.NodesPerCluster * c.GPUsPerNode
	}
	js := make([]*jobState, len(jobs))
	for i := range jobs {
		js[i] = &jobState{Job: &jobs[i], i: i, reserved: -1, cluster: -1}
		js[i].comp, err = st.Compile(jobs[i].Request)
		if err != nil {
			return Result{}, fmt.Errorf("sim: job %s: %w", jobs[i].ID, err)
		}
		if s == Counting {
			ff := jobs[i].Request
			ff.FirstFit = true
			js[i].comp, _ = st.Compile(ff)
		}
	}
	next := 0
	for {
		t := c.Horizon
		if next < len(js) {
			t = min(t, js[next].Submit)
		}
		if r.ends.Len() > 0 {
			t = min(t, r.ends.items[0].at)
		}
		if t >= c.Horizon {
			break
		}
		for r.ends.Len() > 0 && r.ends.items[0].at == t {
			e := heap.Pop(&r.ends).(end)
			r.finish(e.j, t)
		}
		for next < len(js) && js[next].Submit == t {
			r.queue = append(r.queue, js[next])
			if s != Counting && !c.PackOnly {
				q := js[next].Request
				st.ObserveShape(Card, q.GPUsPerNode, q.GPUs)
			}
			next++
		}
		r.pass(t)
	}
	return r.result(js), nil
}

type runner struct {
	c     Config
	s     Strategy
	st    *placement.State
	queue []*jobState
	// admitted are the counting strategy's jobs admitted but not on nodes yet.
	admitted []*jobState
	free     []int // counting: GPUs not admitted, per cluster
	ends     endHeap
	pend     []placement.Pending
	res      Result
	// usedGPUTime and usefulGPUTime are in GPU-seconds.
	usedGPUTime, usefulGPUTime float64
}

func (r *runner) started(j *jobState, t time.Duration) {
	j.started, j.start = true, t
	run := min(j.Runtime, j.TimeLimit)
	heap.Push(&r.ends, end{at: t + run, j: j})
	g := float64(j.Request.GPUs)
	r.usedGPUTime += g * (min(t+run, r.c.Horizon) - t).Seconds()
	if t+run <= r.c.Horizon && j.Runtime <= j.TimeLimit {
		r.usefulGPUTime += g * run.Seconds()
	}
}

func (r *runner) finish(j *jobState, t time.Duration) {
	if err := r.st.Release(j.ID); err != nil {
		panic("sim: " + err.Error())
	}
	if j.cluster >= 0 {
		r.free[j.cluster] += j.Request.GPUs
	}
}

// pass runs one admission pass at t.
func (r *runner) pass(t time.Duration) {
	r.res.Passes++
	now := Epoch.Add(t)
	if r.s == Counting {
		r.countingPass(t, now)
		return
	}
	cfg := placement.PlanConfig{Policy: map[Strategy]placement.Policy{BestEffort: placement.BestEffortFIFO, Strict: placement.StrictFIFO,
		Backfill: placement.Backfill, Conservative: placement.ConservativeBackfill}[r.s], MinAgeReserve: r.c.MinAgeReserve, Slack: r.c.Slack, Replan: r.c.Replan}
	r.pend = r.pend[:0]
	for _, j := range r.queue {
		r.pend = append(r.pend, placement.Pending{ID: j.ID, Req: j.comp, TimeLimit: j.TimeLimit, Queued: Epoch.Add(j.Submit), Prior: j.prior})
	}
	ds := r.st.Plan(now, r.pend, cfg, nil)
	for i, d := range ds {
		j := r.queue[i]
		j.prior = d.Reservation
		switch {
		case d.Start:
			if j.reserved >= 0 && t > j.reserved {
				r.res.ReservationBroken++
			}
			r.started(j, t)
		case d.Reservation != nil && j.reserved < 0:
			j.reserved = d.Reservation.Hold.Sub(Epoch)
		}
	}
	r.queue = slices.DeleteFunc(r.queue, func(j *jobState) bool { return j.started })
}

// countingPass is today's rule: admit by the cluster's free count (best fit,
// as clusterFor does), then put admitted jobs on nodes first-fit, in admission
// order, as they fit.
func (r *runner) countingPass(t time.Duration, now time.Time) {
	for _, j := range r.queue {
		best := -1
		for c, f := range r.free {
			if f >= j.Request.GPUs && (best < 0 || f < r.free[best]) {
				best = c
			}
		}
		if best >= 0 {
			r.free[best] -= j.Request.GPUs
			j.cluster = best
			r.admitted = append(r.admitted, j)
		}
	}
	r.queue = slices.DeleteFunc(r.queue, func(j *jobState) bool { return j.cluster >= 0 })
	for _, j := range r.admitted {
		req := j.comp.Request()
		req.Cluster = fmt.Sprintf("c%d", j.cluster)
		p, ok, err := r.st.Find(req)
		if err != nil {
			panic("sim: " + err.Error())
		}
		if !ok {
			continue
		}
		if err := r.st.Place(j.ID, p, now.Add(j.TimeLimit)); err != nil {
			panic("sim: " + err.Error())
		}
		r.started(j, t)
	}
	r.admitted = slices.DeleteFunc(r.admitted, func(j *jobState) bool { return j.started })
}

func (r *runner) result(js []*jobState) Result {
	res := r.res
	capacity := float64(r.c.GPUs()) * r.c.Horizon.Seconds()
	res.Utilisation = r.usedGPUTime / capacity
	res.EffectiveUtilisation = r.usefulGPUTime / capacity
	res.Waits = make([]time.Duration, len(js))
	for i, j := range js {
		w := r.c.Horizon - j.Submit
		if j.started {
			w = j.start - j.Submit
		} else {
			res.NeverStarted++
			if j.Request.GPUs >= Large {
				res.LargeNeverStarted++
			}
		}
		res.Waits[i] = w
		if j.Request.GPUs >= Large {
			res.MaxWaitLarge = max(res.MaxWaitLarge, w)
		}
	}
	sorted := slices.Clone(res.Waits)
	slices.Sort(sorted)
	if n := len(sorted); n > 0 {
		res.P50Wait, res.P95Wait, res.MaxWait = sorted[n/2], sorted[min(n-1, n*95/100)], sorted[n-1]
	}
	return res
}

type end struct {
	at time.Duration
	j  *jobState
}

// endHeap orders running jobs by end, then by job index (deterministic).
type endHeap struct{ items []end }

func (h *endHeap) Len() int { return len(h.items) }
func (h *endHeap) Less(a, b int) bool {
	x, y := h.items[a], h.items[b]
	return x.at < y.at || x.at == y.at && x.j.i < y.j.i
}
func (h *endHeap) Swap(a, b int) { h.items[a], h.items[b] = h.items[b], h.items[a] }
func (h *endHeap) Push(x any)    { h.items = append(h.items, x.(end)) }
func (h *endHeap) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return x
}
