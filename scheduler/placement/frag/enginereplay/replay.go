package enginereplay

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gpupool/gpupool/scheduler/placement"
	"github.com/gpupool/gpupool/scheduler/placement/frag"
)

// Policy and Queue name the engine's row in frag's replay table (Policy with
// CardsAsNodes; Config.Name otherwise).
const (
	Policy = "engine"
	Queue  = "backfill"
)

// Card orders (Config.CardOrder): the order in which a task that allows
// several GPU models tries them.
const (
	// CardsAsNodes: the order in which the nodes first name the models.
	CardsAsNodes = "nodes"
	// CardsSmallFirst: the models of small nodes first (CardsBySize).
	CardsSmallFirst = "small-first"
)

// CardOrders are the card orders Config accepts.
var CardOrders = []string{CardsAsNodes, CardsSmallFirst}

// Epoch is replay second 0 as the placement package sees it.
var Epoch = time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)

// Config is how the engine places the trace's tasks.
type Config struct {
	// Plan is each pass's configuration: placement.DefaultPlanConfig,
	// conservative backfill, as the engine runs by default.
	Plan placement.PlanConfig
	// Sharing is every fraction's sharing mode: one mode, so that any two
	// fractions may share a GPU, as in the trace.
	Sharing placement.Sharing
	// CardOrder is the order in which a task that allows several GPU models
	// (every task of the trace: none names one) tries them: the engine tries a
	// job's card types in order, cheapest first, and the trace gives no
	// costs. CardsAsNodes or CardsSmallFirst.
	CardOrder string
	// Samples is how many times, evenly spaced over the window, the stranded
	// capacity is measured (frag.ReplayConfig.Samples).
	Samples int
}

// DefaultConfig is conservative backfill, time-sliced fractions, the nodes'
// order of card types and 2,000 samples.
func DefaultConfig() Config {
	return Config{Plan: placement.DefaultPlanConfig(), Sharing: placement.TimeSlice, CardOrder: CardsAsNodes, Samples: frag.DefaultReplayConfig().Samples}
}

// Configs are the engine's rows of the replay table: DefaultConfig under each
// card order, with samples stranded-capacity samples.
func Configs(samples int) []Config {
	var out []Config
	for _, order := range CardOrders {
		c := DefaultConfig()
		c.CardOrder, c.Samples = order, samples
		out = append(out, c)
	}
	return out
}

// Name is the row's policy in frag's table: "engine", and the card order
// when it is not the nodes'.
func (c Config) Name() string {
	if c.CardOrder == CardsSmallFirst {
		return Policy + ", small cards first"
	}
	return Policy
}

// Validate reports a config the replay cannot run.
func (c Config) Validate() error {
	if err := c.Plan.Validate(); err != nil {
		return fmt.Errorf("enginereplay: config: plan: %w", err)
	}
	if !slices.Contains(placement.Sharings, c.Sharing) {
		return fmt.Errorf("enginereplay: config: sharing %q is none of %v", c.Sharing, placement.Sharings)
	}
	if !slices.Contains(CardOrders, c.CardOrder) {
		return fmt.Errorf("enginereplay: config: card order %q is none of %v", c.CardOrder, CardOrders)
	}
	if c.Samples < 1 || c.Samples > 1e6 {
		return fmt.Errorf("enginereplay: config: samples %d must be in [1, 1000000]", c.Samples)
	}
	return nil
}

// Replay is frag.Replay of tr under rc with a row per engine config
// appended: the same cut cluster and the same jobs, placed by Run.
func Replay(tr frag.Trace, rc frag.ReplayConfig, cfgs ...Config) (frag.ReplayResult, error) {
	res, err := frag.Replay(tr, rc)
	if err != nil {
		return frag.ReplayResult{}, err
	}
	rows, err := Rows(frag.CutNodes(tr.Nodes, rc.Nodes), &res.Input, cfgs...)
	if err != nil {
		return frag.ReplayResult{}, err
	}
	res.Runs = append(res.Runs, rows...)
	return res, nil
}

// Rows is Run of each config on the same input, in parallel.
func Rows(nodes []frag.NodeSpec, in *frag.ReplayInput, cfgs ...Config) ([]frag.ReplayRun, error) {
	rows := make([]frag.ReplayRun, len(cfgs))
	errs := make([]error, len(cfgs))
	var wg sync.WaitGroup
	for k, cfg := range cfgs {
		wg.Go(func() { rows[k], errs[k] = Run(nodes, in, cfg) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return rows, nil
}

// Run replays in's jobs on nodes through placement.Plan: at every event (an
// arrival, a job's end) the jobs that end are released and one pass plans the
// waiting GPU jobs in arrival order, each with its recorded run time as its
// time limit; what the pass starts, starts. CPU and memory are ignored, so a
// CPU-only job starts when it arrives.
func Run(nodes []frag.NodeSpec, in *frag.ReplayInput, cfg Config) (frag.ReplayRun, error) {
	return run(nodes, in, cfg, nil)
}

func run(nodes []frag.NodeSpec, in *frag.ReplayInput, cfg Config, check func(*runner)) (frag.ReplayRun, error) {
	if err := cfg.Validate(); err != nil {
		return frag.ReplayRun{}, err
	}
	r, err := newRunner(nodes, in, cfg)
	if err != nil {
		return frag.ReplayRun{}, err
	}
	r.check = check
	if err := r.run(); err != nil {
		return frag.ReplayRun{}, err
	}
	return r.meter.Run(cfg.Name(), Queue, in, r.start, r.mirror.TotalGPUs()), nil
}

// runner is one replay. mirror is a frag.Cluster holding what the engine
// placed (CPU and memory dropped), on which the stranded capacity is measured
// as for frag's rows; placing on it also checks that no GPU is given twice.
type runner struct {
	in     *frag.ReplayInput
	cfg    Config
	st     *placement.State
	mirror *frag.Cluster
	node   map[string]int // node name → index in mirror
	req    []placement.Compiled
	// fits is false for a GPU job that can never be placed (it asks models the
	// fleet lacks, or more GPUs than any node of them has): it waits to the end.
	fits   []bool
	start  []float64
	placed []placement.Placement
	prior  []*placement.Reservation
	queue  []int // waiting jobs, arrival order
	ends   []ending
	alloc  int // milli-GPU allocated now
	meter  *frag.Meter
	now    float64
	pend   []placement.Pending
	check  func(*runner) // test hook: after every event time
}

// ending is a running job and when it ends.
type ending struct {
	at  float64
	job int
}

func newRunner(nodes []frag.NodeSpec, in *frag.ReplayInput, cfg Config) (*runner, error) {
	var order []string
	if cfg.CardOrder == CardsSmallFirst {
		order = CardsBySize(nodes)
	}
	fleet, err := Fleet(nodes, order)
	if err != nil {
		return nil, err
	}
	st, err := placement.NewState(fleet)
	if err != nil {
		return nil, fmt.Errorf("enginereplay: %w", err)
	}
	n := len(in.Jobs)
	r := &runner{in: in, cfg: cfg, st: st, mirror: frag.NewCluster(nodes), node: map[string]int{}, meter: frag.NewMeter(in.Horizon, cfg.Samples),
		req: make([]placement.Compiled, n), fits: make([]bool, n), start: make([]float64, n), placed: make([]placement.Placement, n),
		prior: make([]*placement.Reservation, n)}
	for i, nd := range nodes {
		r.node[nd.Name] = i
	}
	cards := cardNames(fleet)
	for i, j := range in.Jobs {
		r.start[i] = -1
		q, ok := RequestOf(j.Shape, cards, cfg.Sharing)
		if !ok {
			continue
		}
		c, err := st.Compile(q)
		switch {
		case errors.Is(err, placement.ErrNeverFits):
			continue
		case err != nil:
			return nil, fmt.Errorf("enginereplay: job %d (task %d, %+v): %w", i, j.Task, j.Shape, err)
		}
		r.req[i], r.fits[i] = c, true
	}
	return r, nil
}

// gpuShape is a job's shape as the engine sees it: CPU and memory dropped.
func gpuShape(s frag.Shape) frag.Shape {
	s.CPUMilli, s.MemoryMiB = 0, 0
	return s
}

// run replays every event up to the horizon.
func (r *runner) run() error {
	jobs, next := r.in.Jobs, 0
	for {
		end := math.Inf(1)
		if len(r.ends) > 0 {
			end = r.ends[0].at
		}
		t, ok := r.in.NextEvent(next, end)
		if !ok {
			break
		}
		r.meter.Advance(t, r.alloc, r.stranded)
		r.now = t
		for len(r.ends) > 0 && r.ends[0].at == t {
			if err := r.finish(r.ends[0].job); err != nil {
				return err
			}
			r.ends = r.ends[1:]
		}
		for ; next < len(jobs) && jobs[next].Arrive == t; next++ {
			if err := r.arrive(next); err != nil {
				return err
			}
		}
		if err := r.pass(); err != nil {
			return err
		}
		if r.check != nil {
			r.check(r)
		}
	}
	r.meter.Advance(r.in.Horizon, r.alloc, r.stranded)
	return nil
}

// arrive queues job i; a CPU-only job starts at once (nothing it asks is
// modelled). The engine learns each whole-GPU job's shape on every card it may
// use when it is submitted.
func (r *runner) arrive(i int) error {
	sh := r.in.Jobs[i].Shape
	if sh.GPUs == 0 {
		return r.started(i, placement.Placement{})
	}
	r.queue = append(r.queue, i)
	if r.fits[i] && !sh.Fraction() && !r.cfg.Plan.PackOnly {
		q := r.req[i].Request()
		for _, c := range q.Cards {
			r.st.ObserveShape(c, q.GPUsPerNode, q.GPUs)
		}
	}
	return nil
}

// pass is one placement.Plan over the waiting jobs that can ever be placed.
func (r *runner) pass() error {
	r.pend = r.pend[:0]
	var ids []int
	for _, i := range r.queue {
		if !r.fits[i] {
			continue
		}
		run := time.Duration(r.in.Jobs[i].Run * float64(time.Second))
		r.pend = append(r.pend, placement.Pending{ID: strconv.Itoa(i), Req: r.req[i], TimeLimit: max(run, time.Nanosecond),
			Queued: at(r.in.Jobs[i].Arrive), Prior: r.prior[i]})
		ids = append(ids, i)
	}
	if len(r.pend) == 0 {
		return nil
	}
	for k, d := range r.st.Plan(at(r.now), r.pend, r.cfg.Plan, nil) {
		i := ids[k]
		r.prior[i] = d.Reservation
		if d.Start {
			if err := r.started(i, d.Placement); err != nil {
				return err
			}
		}
	}
	r.queue = slices.DeleteFunc(r.queue, func(i int) bool { return r.start[i] >= 0 })
	return nil
}

// at is replay second t as a time.
func at(t float64) time.Time { return Epoch.Add(time.Duration(math.Round(t * float64(time.Second)))) }

// started records job i's start now at pl (the placement Plan made), mirrors
// it and schedules its end.
func (r *runner) started(i int, pl placement.Placement) error {
	j := r.in.Jobs[i]
	if j.Shape.GPUs > 0 {
		p, err := r.mirrorOf(i, pl)
		if err != nil {
			return err
		}
		if err := r.mirror.Place(gpuShape(j.Shape), p); err != nil {
			return fmt.Errorf("enginereplay: job %d started at %s: %w", i, pl, err)
		}
	}
	r.start[i], r.placed[i] = r.now, pl
	r.alloc += j.Shape.DemandMilli()
	e := ending{at: r.now + j.Run, job: i}
	k, _ := slices.BinarySearchFunc(r.ends, e, func(a, b ending) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.job, b.job)) })
	r.ends = slices.Insert(r.ends, k, e)
	return nil
}

// mirrorOf is job i's placement on the mirror: the node and the GPUs (or the
// shared GPU) the engine gave it. A trace task runs on one node.
func (r *runner) mirrorOf(i int, pl placement.Placement) (frag.Placement, error) {
	na := pl.Nodes()
	if len(na) != 1 {
		return frag.Placement{}, fmt.Errorf("enginereplay: job %d started on %d nodes (%s); a trace task runs on one", i, len(na), pl)
	}
	p := frag.Placement{Node: r.node[na[0].Node], GPUs: slices.Clone(na[0].GPUs)}
	for _, s := range na[0].Shares {
		p.GPUs = append(p.GPUs, s.GPU)
	}
	return p, nil
}

// finish releases job i: from the engine's state and from the mirror.
func (r *runner) finish(i int) error {
	j := r.in.Jobs[i]
	r.alloc -= j.Shape.DemandMilli()
	if j.Shape.GPUs == 0 {
		return nil
	}
	if err := r.st.Release(strconv.Itoa(i)); err != nil {
		return fmt.Errorf("enginereplay: job %d ends: %w", i, err)
	}
	p, err := r.mirrorOf(i, r.placed[i])
	if err != nil {
		return err
	}
	r.mirror.Release(gpuShape(j.Shape), p)
	return nil
}

// stranded is the mirror's free GPU capacity that no waiting job's shape can
// use (frag.StrandedMilli), as frag's rows measure it.
func (r *runner) stranded() int {
	if len(r.queue) == 0 {
		return 0
	}
	shapes := make([]frag.Shape, 0, len(r.queue))
	for _, i := range r.queue {
		shapes = append(shapes, gpuShape(r.in.Jobs[i].Shape))
	}
	return frag.StrandedMilli(r.mirror, shapes)
}
