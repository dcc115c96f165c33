package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/gpupool/gpupool/scheduler/placement"
)

// Card is the simulated fleet's card type.
const Card = "H100-80GB"

// Config sizes a simulation.
type Config struct {
	Clusters        int
	NodesPerCluster int
	GPUsPerNode     int
	// RackNodes is nodes per rack; a block is two racks.
	RackNodes int
	// Load is the offered load: the job stream's GPU-hours over the fleet's
	// capacity for the horizon.
	Load    float64
	Seed    uint64
	Horizon time.Duration
	// MinAgeReserve is the backfill strategies' placement.PlanConfig.MinAgeReserve.
	MinAgeReserve time.Duration
	// Slack is the backfill strategies' placement.PlanConfig.Slack.
	Slack float64
	// Replan is the backfill strategies' placement.PlanConfig.Replan.
	Replan int
	// PackOnly places by bin-packing alone, as before the expected workload
	// was learned: no shape is observed (placement.State.ObserveShape).
	PackOnly bool
}

// DefaultConfig is 2 clusters × 32 nodes × 8 GPUs for a week at load 0.95.
func DefaultConfig() Config {
	return Config{Clusters: 2, NodesPerCluster: 32, GPUsPerNode: 8, RackNodes: 8, Load: 0.95, Seed: 1, Horizon: 7 * 24 * time.Hour}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	switch {
	case c.Clusters <= 0 || c.NodesPerCluster <= 0 || c.RackNodes <= 0:
		return fmt.Errorf("sim: clusters %d, nodes %d and rack nodes %d must be positive", c.Clusters, c.NodesPerCluster, c.RackNodes)
	case c.GPUsPerNode <= 0 || c.GPUsPerNode > placement.MaxGPUsPerNode:
		return fmt.Errorf("sim: gpus per node %d must be 1 to %d", c.GPUsPerNode, placement.MaxGPUsPerNode)
	case c.Load <= 0 || c.Horizon <= 0:
		return fmt.Errorf("sim: load %v and horizon %v must be positive", c.Load, c.Horizon)
	}
	return nil
}

// GPUs is the fleet's size.
func (c Config) GPUs() int { return c.Clusters * c.NodesPerCluster * c.GPUsPerNode }

// Fleet builds the simulated fleet: every node of Card, racks of RackNodes in
// blocks of two racks.
func (c Config) Fleet() placement.Fleet {
	f := placement.Fleet{Cards: []placement.Card{{Name: Card, MemoryGiB: 80}}, Levels: []string{"rack", "block"}}
	for ci := range c.Clusters {
		cl := placement.Cluster{Name: fmt.Sprintf("c%d", ci)}
		for n := range c.NodesPerCluster {
			cl.Nodes = append(cl.Nodes, placement.Node{Name: fmt.Sprintf("c%d-n%03d", ci, n), Card: Card, GPUs: c.GPUsPerNode,
				Topology: map[string]string{"rack": fmt.Sprintf("r%d", n/c.RackNodes), "block": fmt.Sprintf("b%d", n/(2*c.RackNodes))}})
		}
		f.Clusters = append(f.Clusters, cl)
	}
	return f
}

// Job is one submitted job of the stream.
type Job struct {
	ID      string
	Submit  time.Duration // since the start
	Request placement.Request
	// Runtime is how long it really runs; TimeLimit what its user set.
	Runtime, TimeLimit time.Duration
}

// sizes are the job sizes in GPUs and their weights: many small jobs, some
// whole nodes, a few multi-node gangs.
var sizes = []struct {
	gpus   int
	weight float64
}{{1, 0.40}, {2, 0.14}, {4, 0.14}, {8, 0.14}, {16, 0.08}, {32, 0.06}, {64, 0.04}}

// Workload draws the job stream for c: sizes as above (gangs of 16–64 are
// gpus_per_node = a node's GPUs, two in three preferring one rack and one in
// three requiring one block), run times log-normal (median 40 min, σ 1.6, from 2
// minutes to 3 days), time limits 2–10× the run time rounded up to 15 minutes,
// and Poisson arrivals over the horizon with as many jobs as make the offered
// load c.Load.
func Workload(c Config) []Job {
	r := rand.New(rand.NewPCG(c.Seed, 0x9e3779b97f4a7c15))
	total := 0.0
	for _, s := range sizes {
		total += s.weight
	}
	target := c.Load * float64(c.GPUs()) * c.Horizon.Hours()
	var jobs []Job
	work := 0.0
	for work < target {
		x := r.Float64() * total
		g := sizes[len(sizes)-1].gpus
		for _, s := range sizes {
			if x < s.weight {
				g = s.gpus
				break
			}
			x -= s.weight
		}
		g = min(g, c.GPUs())
		run := time.Duration(math.Exp(math.Log(40)+1.6*r.NormFloat64()) * float64(time.Minute))
		run = min(max(run, 2*time.Minute), 72*time.Hour).Round(time.Second)
		limit := time.Duration(float64(run) * (2 + 8*r.Float64()))
		limit = (limit + 15*time.Minute - 1).Truncate(15 * time.Minute)
		req := placement.Request{GPUs: g, Cards: []string{Card}}
		if g >= c.GPUsPerNode {
			req.GPUsPerNode = c.GPUsPerNode
			if g%c.GPUsPerNode != 0 {
				req.GPUsPerNode = 0
			}
		}
		if g > c.GPUsPerNode {
			if r.IntN(3) == 0 && g <= 2*c.RackNodes*c.GPUsPerNode {
				req.Level, req.LevelMode = "block", placement.Required
			} else {
				req.Level, req.LevelMode = "rack", placement.Preferred
			}
		}
		jobs = append(jobs, Job{Request: req, Runtime: run, TimeLimit: limit})
		work += float64(g) * run.Hours()
	}
	at := make([]time.Duration, len(jobs))
	for i := range at {
		at[i] = time.Duration(r.Float64() * float64(c.Horizon)).Round(time.Second)
	}
	slices.Sort(at)
	for i := range jobs {
		jobs[i].ID = fmt.Sprintf("j%05d", i)
		jobs[i].Submit = at[i]
	}
	return jobs
}
