package frag

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
)

// Config is the paper's experiment: tasks drawn from the trace (uniformly, with
// replacement, seeded) are submitted one by one until the GPUs asked for reach
// MaxDemand × the cluster's GPUs; at every Step of demand the share of GPU
// capacity left unallocated is recorded. A task that fits nowhere is dropped.
type Config struct {
	Seeds     []uint64
	Step      float64
	MaxDemand float64
	Policies  []string
}

// DefaultConfig is every 5 % of capacity up to 110 %, five seeds, every policy.
func DefaultConfig() Config {
	return Config{Seeds: []uint64{1, 2, 3, 4, 5}, Step: 0.05, MaxDemand: 1.1, Policies: PolicyNames}
}

// Validate reports a config the experiment cannot run.
func (c Config) Validate() error {
	switch {
	case len(c.Seeds) == 0:
		return fmt.Errorf("frag: config: no seeds")
	case c.Step <= 0 || c.Step > c.MaxDemand:
		return fmt.Errorf("frag: config: step %g must be in (0, max demand %g]", c.Step, c.MaxDemand)
	case c.MaxDemand > 10:
		return fmt.Errorf("frag: config: max demand %g is over 10× capacity", c.MaxDemand)
	case len(c.Policies) == 0:
		return fmt.Errorf("frag: config: no policies")
	}
	return nil
}

// Curve is one policy's run on one seed: at each level, the share of GPU
// capacity unallocated (0–1) and the tasks dropped so far.
type Curve struct {
	Policy      string
	Seed        uint64
	Unallocated []float64
	Dropped     []int
}

// Result is the experiment's outcome on one trace.
type Result struct {
	Levels []float64 // demand levels, as shares of the cluster's GPUs
	Curves []Curve   // per policy, per seed, in Config order
	Nodes  int
	GPUs   int
	Tasks  int
}

// Run is the experiment on tr; every policy sees the same task sequence for a
// seed. Policies and seeds run in parallel.
func Run(tr Trace, cfg Config) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	if len(tr.Tasks) == 0 || len(tr.Nodes) == 0 {
		return Result{}, fmt.Errorf("frag: run: the trace has %d nodes and %d tasks; want some of each", len(tr.Nodes), len(tr.Tasks))
	}
	w := WorkloadOf(tr.Tasks)
	res := Result{Nodes: len(tr.Nodes), GPUs: NewCluster(tr.Nodes).TotalGPUs(), Tasks: len(tr.Tasks)}
	for l := cfg.Step; l <= cfg.MaxDemand+1e-9; l += cfg.Step {
		res.Levels = append(res.Levels, l)
	}
	res.Curves = make([]Curve, len(cfg.Policies)*len(cfg.Seeds))
	errs := make([]error, len(res.Curves))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for pi, name := range cfg.Policies {
		for si, seed := range cfg.Seeds {
			k := pi*len(cfg.Seeds) + si
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				res.Curves[k], errs[k] = runOne(tr, w, name, seed, res.Levels)
			})
		}
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return Result{}, err
		}
	}
	return res, nil
}

func runOne(tr Trace, w Workload, name string, seed uint64, levels []float64) (Curve, error) {
	pol, err := NewPolicy(name, w, seed)
	if err != nil {
		return Curve{}, err
	}
	c := NewCluster(tr.Nodes)
	capMilli := float64(c.TotalGPUs() * MilliGPU)
	draw := rand.New(rand.NewPCG(seed, 1))
	cur := Curve{Policy: name, Seed: seed}
	arrived, dropped := 0, 0
	for len(cur.Unallocated) < len(levels) {
		s := ShapeOf(tr.Tasks[draw.IntN(len(tr.Tasks))])
		arrived += s.DemandMilli()
		if p, ok := pol.Choose(c, s); !ok {
			dropped++
		} else if err := c.Place(s, p); err != nil {
			return Curve{}, fmt.Errorf("frag: policy %s chose a placement that does not fit: %w", name, err)
		}
		for len(cur.Unallocated) < len(levels) && float64(arrived) >= levels[len(cur.Unallocated)]*capMilli-1e-6 {
			cur.Unallocated = append(cur.Unallocated, float64(c.FreeMilli())/capMilli)
			cur.Dropped = append(cur.Dropped, dropped)
		}
	}
	return cur, nil
}
