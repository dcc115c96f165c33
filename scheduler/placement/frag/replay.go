package frag

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Queue disciplines of the replay.
const (
	// QueueFIFO is best-effort FIFO: at every event the waiting tasks are
	// tried in arrival order; one that fits nowhere is skipped and later ones
	// may start.
	QueueFIFO = "fifo"
	// QueueReserve is QueueFIFO with multi-GPU tasks first: waiting multi-GPU
	// tasks are tried before the others, and each holds one node (the one with
	// the most whole free GPUs) on which nothing else starts until it does.
	QueueReserve = "reserve"
)

// QueueNames are the queue disciplines ReplayConfig accepts.
var QueueNames = []string{QueueFIFO, QueueReserve}

// ReplayConfig is the replay with time: the trace's tasks arrive at their
// creation times, compressed by Compress (divided by it), and run for their
// run times as recorded (not compressed); a task that does not fit waits.
type ReplayConfig struct {
	// Load sets Compress when Compress is 0: the compression at which the
	// GPU demand an unbounded cluster would run, averaged over the replay's
	// window, is Load × the cluster's GPUs (1 when the trace's own times reach it).
	Load     float64
	Compress float64
	// Nodes is the share of the trace's nodes the replay's cluster keeps
	// (CutNodes); 1 keeps them all.
	Nodes    float64
	Seed     uint64
	Policies []string
	Queues   []string
	// Samples is how many times, evenly spaced over the window, the stranded
	// capacity is measured.
	Samples int
	// GPUOnly replays the tasks as asking GPUs only (Trace.GPUOnly): their CPU
	// and memory are dropped, as the scheduler's placement package, which
	// models neither, sees them.
	GPUOnly bool
}

// DefaultReplayConfig is a tenth of the nodes, a load of 0.7, seed 1, every
// policy and queue, 2,000 samples.
func DefaultReplayConfig() ReplayConfig {
	return ReplayConfig{Load: 0.7, Nodes: 0.1, Seed: 1, Policies: PolicyNames, Queues: QueueNames, Samples: 2000}
}

// Validate reports a config the replay cannot run.
func (c ReplayConfig) Validate() error {
	switch {
	case c.Compress == 0 && (c.Load <= 0 || c.Load > 10):
		return fmt.Errorf("frag: replay config: load %g must be in (0, 10]", c.Load)
	case c.Compress != 0 && (c.Compress < 1 || c.Compress > 1e9):
		return fmt.Errorf("frag: replay config: compress %g must be 0 (from the load) or in [1, 1e9]", c.Compress)
	case c.Nodes <= 0 || c.Nodes > 1:
		return fmt.Errorf("frag: replay config: nodes %g must be a share in (0, 1]", c.Nodes)
	case c.Samples < 1 || c.Samples > 1e6:
		return fmt.Errorf("frag: replay config: samples %d must be in [1, 1000000]", c.Samples)
	case len(c.Policies) == 0:
		return fmt.Errorf("frag: replay config: no policies")
	case len(c.Queues) == 0:
		return fmt.Errorf("frag: replay config: no queues")
	}
	for _, q := range c.Queues {
		if !slices.Contains(QueueNames, q) {
			return fmt.Errorf("frag: replay config: queue %q: unknown (want one of %v)", q, QueueNames)
		}
	}
	return nil
}

// Job is one task as the replay sees it: its shape, when it arrives (seconds
// from the replay's start, compressed) and how long it runs once started
// (seconds, as in the trace).
type Job struct {
	Task   int // index in the trace's tasks
	Shape  Shape
	Arrive float64
	Run    float64
}

// ReplayInput is the trace turned into jobs, arrival order.
type ReplayInput struct {
	Jobs []Job
	// Skipped counts the tasks without usable times (no scheduled_time: they
	// never ran in the trace), left out of the replay.
	Skipped int
	// Start and End bound the trace's window in trace seconds: Start is the
	// first task end (before it the trace holds only the tasks still running
	// then), End the last.
	Start, End int64
	Compress   float64
	Horizon    float64 // the window's length in replay seconds: (End − Start) / Compress
	Load       float64 // the offered load at Compress (see ReplayConfig.Load)
}

// NextEvent is the replay's next event time: the arrival of job next (none
// when next is past the last job) or end (when the first running job ends,
// +Inf when none runs), whichever is first; ok is false past the horizon.
func (in *ReplayInput) NextEvent(next int, end float64) (t float64, ok bool) {
	t = end
	if next < len(in.Jobs) {
		t = min(t, in.Jobs[next].Arrive)
	}
	return t, t <= in.Horizon
}

// usable reports whether the task has times the replay can use: created,
// scheduled and deleted, in that order.
func usable(t Task) bool {
	return t.Created >= 0 && t.Scheduled >= t.Created && t.Deleted >= t.Scheduled
}

// PrepareReplay turns the trace's tasks into jobs. A task created before the
// window's start arrives at 0 and runs for what it had left then; every other
// task arrives at (created − start) / compress and runs deleted − scheduled.
func PrepareReplay(tr Trace, cfg ReplayConfig) (ReplayInput, error) {
	if cfg.GPUOnly {
		tr = tr.GPUOnly()
	}
	in := ReplayInput{Start: math.MaxInt64, End: -1}
	for _, t := range tr.Tasks {
		if usable(t) {
			in.Start, in.End = min(in.Start, t.Deleted), max(in.End, t.Deleted)
		}
	}
	if in.End < 0 || in.End == in.Start {
		return ReplayInput{}, fmt.Errorf("frag: replay: no task has a window to replay (want created ≤ scheduled ≤ deleted times spanning some time)")
	}
	for i, t := range tr.Tasks {
		if !usable(t) {
			in.Skipped++
			continue
		}
		a := float64(max(t.Created, in.Start) - in.Start)
		in.Jobs = append(in.Jobs, Job{Task: i, Shape: ShapeOf(t), Arrive: a, Run: float64(t.Deleted - max(t.Scheduled, in.Start))})
	}
	slices.SortStableFunc(in.Jobs, func(a, b Job) int { return cmp.Compare(a.Arrive, b.Arrive) })
	capGPUs := float64(NewCluster(tr.Nodes).TotalGPUs())
	if capGPUs == 0 {
		return ReplayInput{}, fmt.Errorf("frag: replay: the trace's nodes have no GPUs")
	}
	window := float64(in.End - in.Start)
	in.Compress = cfg.Compress
	if in.Compress == 0 {
		k, err := compressFor(in.Jobs, window, capGPUs, cfg.Load)
		if err != nil {
			return ReplayInput{}, err
		}
		in.Compress = k
	}
	in.Load = offered(in.Jobs, window, capGPUs, in.Compress)
	in.Horizon = window / in.Compress
	for i := range in.Jobs {
		in.Jobs[i].Arrive /= in.Compress
	}
	return in, nil
}

// offered is the GPU demand an unbounded cluster would run, averaged over the
// window compressed by k, as a share of capGPUs; jobs' arrivals are in trace
// seconds from the window's start.
func offered(jobs []Job, window, capGPUs, k float64) float64 {
	sum := 0.0
	for _, j := range jobs {
		sum += float64(j.Shape.DemandMilli()) / MilliGPU * min(k*j.Run, window-j.Arrive)
	}
	return sum / (capGPUs * window)
}

// compressFor is the compression at which offered reaches load: 1 when the
// trace's own times reach it; an error when even arrivals all at once do not.
func compressFor(jobs []Job, window, capGPUs, load float64) (float64, error) {
	if offered(jobs, window, capGPUs, 1) >= load {
		return 1, nil
	}
	lo, hi := 1.0, 1e9
	if top := offered(jobs, window, capGPUs, hi); top < load {
		return 0, fmt.Errorf("frag: replay: load %g is out of reach: with every arrival at once the trace offers %.3f of the cluster's GPUs", load, top)
	}
	for range 200 {
		mid := math.Sqrt(lo * hi)
		if offered(jobs, window, capGPUs, mid) < load {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi, nil
}

// GPUOnly is the trace with every task's CPU and memory set to 0: a task
// asks only its GPUs (a CPU-only task then asks nothing).
func (tr Trace) GPUOnly() Trace {
	tasks := slices.Clone(tr.Tasks)
	for i := range tasks {
		tasks[i].CPUMilli, tasks[i].MemoryMiB = 0, 0
	}
	return Trace{Nodes: tr.Nodes, Tasks: tasks}
}

// CutNodes keeps a share of the nodes: from each group of nodes of one GPU
// model and GPU count, ceil(share × its size) of them, evenly spaced in file
// order, so that the mix of node kinds stays the trace's. No randomness.
func CutNodes(nodes []NodeSpec, share float64) []NodeSpec {
	type kind struct {
		model string
		gpus  int
	}
	groups := map[kind][]int{}
	for i, n := range nodes {
		k := kind{n.Model, n.GPUs}
		groups[k] = append(groups[k], i)
	}
	keep := make([]bool, len(nodes))
	for _, idx := range groups {
		m := int(math.Ceil(share*float64(len(idx)) - 1e-9))
		for j := range m {
			keep[idx[j*len(idx)/m]] = true
		}
	}
	var out []NodeSpec
	for i, n := range nodes {
		if keep[i] {
			out = append(out, n)
		}
	}
	return out
}
