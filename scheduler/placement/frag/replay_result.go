package frag

import (
	"fmt"
	"math"
	"runtime"
	"sync"
)

// ReplayRun is one policy's replay under one queue discipline. Times are
// replay seconds; waits of jobs never started count until the horizon (a lower
// bound).
type ReplayRun struct {
	Policy string
	Queue  string
	// Utilisation is the GPU time allocated over the window as a share of the
	// cluster's GPU capacity over it.
	Utilisation float64
	WaitP50     float64
	WaitP95     float64
	WaitMax     float64
	// StrandedGPUHours is the free GPU capacity that no waiting job's shape
	// could use (Figure's stranded capacity), sampled at ReplayConfig.Samples
	// evenly spaced times and integrated over the window, in GPU-hours of
	// replay time.
	StrandedGPUHours float64
	Multi            int // multi-GPU jobs replayed
	// MultiNeverStarted and NeverStarted count the jobs still waiting at the
	// horizon: multi-GPU ones, and all.
	MultiNeverStarted int
	NeverStarted      int
	// MultiNeverStartedOld counts the multi-GPU jobs never started that
	// arrived at least OldWait before the horizon: a job that arrives minutes
	// before the window ends cannot be expected to start in it, one that has
	// waited an hour is starving.
	MultiNeverStartedOld int
	// Start is each job's start time (ReplayInput.Jobs order), -1 if never.
	Start []float64
}

// OldWait is how long before the window's end a job must have arrived to
// count in ReplayRun.MultiNeverStartedOld: an hour of replay time.
const OldWait = 3600.0

// ReplayResult is the replay of one trace: every policy and queue, same seed,
// same jobs.
type ReplayResult struct {
	Input ReplayInput
	Nodes int     // the replay's cluster, after CutNodes
	GPUs  int     // its GPUs
	Share float64 // ReplayConfig.Nodes
	Seed  uint64
	// GPUOnly is ReplayConfig.GPUOnly: CPU and memory were ignored.
	GPUOnly bool
	// Runs are Config's policies × queues, in that order, and any rows a
	// caller appends (another scheduler's replay of the same Input).
	Runs []ReplayRun
}

// Replay is the replay with time of tr under every policy and queue of cfg,
// run in parallel; each run builds its policy from cfg.Seed.
func Replay(tr Trace, cfg ReplayConfig) (ReplayResult, error) {
	if err := cfg.Validate(); err != nil {
		return ReplayResult{}, err
	}
	tr.Nodes = CutNodes(tr.Nodes, cfg.Nodes)
	if cfg.GPUOnly {
		tr = tr.GPUOnly() // the workload's shapes too, not only the jobs'
	}
	in, err := PrepareReplay(tr, cfg)
	if err != nil {
		return ReplayResult{}, err
	}
	replayed := make([]Task, len(in.Jobs))
	for i, j := range in.Jobs {
		replayed[i] = tr.Tasks[j.Task]
	}
	w := WorkloadOf(replayed)
	res := ReplayResult{Input: in, Nodes: len(tr.Nodes), Share: cfg.Nodes, GPUs: NewCluster(tr.Nodes).TotalGPUs(), Seed: cfg.Seed, GPUOnly: cfg.GPUOnly}
	res.Runs = make([]ReplayRun, len(cfg.Policies)*len(cfg.Queues))
	errs := make([]error, len(res.Runs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for pi, p := range cfg.Policies {
		for qi, q := range cfg.Queues {
			k := pi*len(cfg.Queues) + qi
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				res.Runs[k], errs[k] = replayOne(tr.Nodes, &res.Input, w, p, q, cfg, nil)
			})
		}
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return ReplayResult{}, err
		}
	}
	return res, nil
}

func replayOne(nodes []NodeSpec, in *ReplayInput, w Workload, policy, queue string, cfg ReplayConfig, check func(*sim)) (ReplayRun, error) {
	pol, err := NewPolicy(policy, w, cfg.Seed)
	if err != nil {
		return ReplayRun{}, err
	}
	s := newSim(in, NewCluster(nodes), pol, queue == QueueReserve, cfg.Samples)
	s.check = check
	if err := s.run(); err != nil {
		return ReplayRun{}, fmt.Errorf("%w (queue %s)", err, queue)
	}
	return s.summary(policy, queue), nil
}

func (s *sim) summary(policy, queue string) ReplayRun {
	return s.meter.Run(policy, queue, s.in, s.start, s.c.TotalGPUs())
}

// quantile is the nearest-rank q-quantile of sorted xs; 0 when empty.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[max(i, 0)]
}
