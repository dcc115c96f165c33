package sim

import (
	"errors"
	"fmt"
	"time"
)

// Config shapes the simulated fleet and its workload.
type Config struct {
	// Seed selects the fleet: the same Config always yields the same events and
	// samples.
	Seed uint64 `yaml:"seed"`
	// Clusters is the number of clusters, each in its own region and time zone.
	Clusters int `yaml:"clusters"`
	// NodesPerCluster is the number of GPU nodes in each cluster; node types cycle
	// through H100, MIG-enabled A100, L40S and A100 80GB nodes.
	NodesPerCluster int `yaml:"nodes_per_cluster"`
	// GPUsPerNode is the number of physical GPUs in every node.
	GPUsPerNode int `yaml:"gpus_per_node"`
	// Start is the simulated start time; the caller must set it (there is no
	// default, so that runs are reproducible rather than tied to the wall clock).
	Start time.Time `yaml:"start"`
	// Tick is the sample interval in simulated time.
	Tick time.Duration `yaml:"tick"`
	// Load is the fraction of the fleet's physical GPUs that jobs demand on average
	// (GPU-seconds requested over GPU-seconds available). Above about 0.8 queues grow.
	Load float64 `yaml:"load"`
	// RealFleet plants the patterns of a real fleet that the analyzer's harder
	// detectors are scored on: half of each L40S node's GPUs time-sliced between
	// two tenants (dev notebooks and inference share them), training jobs that
	// hang (a collective deadlock, or a host-side hang), online inference servers
	// holding most of their GPU's memory at a few % compute,
	// small jobs on big cards that are busy only part of the time, and Kubernetes
	// clusters whose scheduler gives a GPU to a new job while an ended job's
	// process still holds memory on it. Off, the fleet of a seed is what it was
	// before these existed.
	RealFleet bool `yaml:"real_fleet"`
	// NodeLossPerNodeDay is how often a node is lost (it crashes or drops off the
	// network), per node and day: its collector goes silent, the jobs on it end
	// failed 10–15 minutes later when its scheduler gives up on the node, and it
	// comes back 30–120 minutes after it went. 0 plants none (a seed's fleet is
	// then what it was before node loss existed). Source of the real rate: Meta's
	// Llama 3 paper (Llama Team, "The Llama 3 Herd of Models", 2024) counts 419
	// unexpected interruptions in 54 days of pre-training on 16,384 H100 GPUs
	// (2,048 nodes of 8), 0.0038 per node-day, about 78 % of them confirmed or
	// suspected hardware issues: 0.0030 per node-day, DemoNodeLossPerNodeDay. (The
	// rest, software bugs and the like, are the program's own failures, which the
	// fleet plants apart; the hardware share includes GPU faults, 58.7 % of all,
	// which a pool mostly sees as XIDs on a node that still reports, so as a rate
	// of whole nodes going silent it is an upper bound.) At that rate a day of 8
	// nodes loses one with a chance of 1 − e^(−0.024) ≈ 2.4 %: most one-day demos
	// see no node_lost at all. A lost node takes every job on it (a MIG node's
	// many); the tests that need the path run it faster (TestNodeLossAndPreemption
	// 0.5, TestFailureReasonsOnSim 0.1, the demo's rate before it was made real:
	// there node_lost was 10–40 % of the failed attempts, seeds 1–4, one day: 3–9
	// of 21–38; three days at load 0.8: 45 of 107).
	NodeLossPerNodeDay float64 `yaml:"node_loss_per_node_day"`
	// PreemptShare is the share of the attempts of batch jobs in preemptible pools
	// (training-exp, inference-batch) that higher-priority work preempts, at a
	// uniform point of their run: they end preempted (exit 143) and are requeued,
	// as Requeue does. 0 plants none; the demo uses DemoPreemptShare, 0.1 (2–6 a
	// day on 8 nodes). Its source: no published average share of preempted GPU
	// batch attempts was found to take it from, so 0.1 is this project's choice,
	// well below what is reported at peak: spot (preemptible) tasks in a
	// 10,365-GPU Alibaba cluster are evicted at up to 93.5 % in peak demand (Duan
	// et al., "GFS: A Preemption-aware Scheduling Framework for GPU Clusters with
	// Predictive Spot Instance Management", arXiv 2509.11134, 2025).
	PreemptShare float64 `yaml:"preempt_share"`
}

// The rates of node loss and preemption the demo runs with (Config): node loss
// at a real fleet's hardware rate (Llama 3's, see NodeLossPerNodeDay), so that a
// one-day demo of 8 nodes mostly shows none, and preemption of one preemptible
// batch attempt in ten.
const (
	DemoNodeLossPerNodeDay = 0.003
	DemoPreemptShare       = 0.1
)

// Limits that keep a mistyped config from building a fleet nobody meant to simulate.
const (
	maxClusters        = 64
	maxNodesPerCluster = 1000
	maxGPUsPerNode     = 16
	minTick            = 100 * time.Millisecond
	maxTick            = time.Hour
	maxLoad            = 2.0
	maxNodeLoss        = 24 // a node lost every hour
)

// DefaultConfig returns a small mixed fleet: 2 clusters × 4 nodes × 8 GPUs, sampled
// every 10 s, with jobs demanding 75 % of the GPUs. Start is left zero: set it.
func DefaultConfig() Config {
	return Config{
		Seed:            1,
		Clusters:        2,
		NodesPerCluster: 4,
		GPUsPerNode:     8,
		Tick:            10 * time.Second,
		Load:            0.75,
	}
}

// Validate reports every field that is out of range; each line of the error starts
// with the field's yaml name.
func (c Config) Validate() error {
	var errs []error
	if c.Clusters < 1 || c.Clusters > maxClusters {
		errs = append(errs, fmt.Errorf("clusters: must be 1..%d, got %d", maxClusters, c.Clusters))
	}
	if c.NodesPerCluster < 1 || c.NodesPerCluster > maxNodesPerCluster {
		errs = append(errs, fmt.Errorf("nodes_per_cluster: must be 1..%d, got %d", maxNodesPerCluster, c.NodesPerCluster))
	}
	if c.GPUsPerNode < 1 || c.GPUsPerNode > maxGPUsPerNode {
		errs = append(errs, fmt.Errorf("gpus_per_node: must be 1..%d, got %d", maxGPUsPerNode, c.GPUsPerNode))
	}
	if c.Start.IsZero() {
		errs = append(errs, errors.New("start: must be set to the simulated start time (UTC), e.g. 2026-12-01T00:00:00Z"))
	}
	if c.Tick < minTick || c.Tick > maxTick {
		errs = append(errs, fmt.Errorf("tick: must be %v..%v, got %v", minTick, maxTick, c.Tick))
	}
	if c.Load < 0 || c.Load > maxLoad || c.Load != c.Load {
		errs = append(errs, fmt.Errorf("load: must be 0..%g (fraction of GPUs demanded), got %g", maxLoad, c.Load))
	}
	if !(c.NodeLossPerNodeDay >= 0 && c.NodeLossPerNodeDay <= maxNodeLoss) {
		errs = append(errs, fmt.Errorf("node_loss_per_node_day: must be 0..%g, got %g", float64(maxNodeLoss), c.NodeLossPerNodeDay))
	}
	if !(c.PreemptShare >= 0 && c.PreemptShare <= 1) {
		errs = append(errs, fmt.Errorf("preempt_share: must be 0..1, got %g", c.PreemptShare))
	}
	return errors.Join(errs...)
}
