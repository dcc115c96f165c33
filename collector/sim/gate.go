package sim

import (
	"fmt"
	"maps"
	"slices"

	"github.com/gpupool/gpupool/schemas"
)

// Gate is an admission controller in front of the fleet's own schedulers, as
// Kueue stands in front of kube-scheduler: with one set (SetGate), every job a
// scheduler knows (source kubernetes or slurm) joins its cluster's queue
// suspended, and the fleet places it — picks its nodes, as kube-scheduler or
// slurmctld would — only once the gate has admitted it (Admit). A job on a
// MIG instance waits too, asking for one instance of its profile
// (Arrival.MIGProfile, as a pod asks for nvidia.com/mig-2g.10gb). Jobs started
// by hand on a node have no scheduler and do not wait.
//
// The fleet calls the gate from inside Advance, at the simulated time of the
// event; the gate must not call back into the fleet from there (collect, and
// act after Advance returns).
type Gate interface {
	// Submitted says that a job joined its queue and waits to be admitted.
	Submitted(Arrival)
	// Ended says that a job the gate was told of ended (any status: it ran and
	// finished, failed, was stopped, or was cancelled while waiting). Its next
	// attempt, if any, is Submitted as a job of its own.
	Ended(key, status string)
}

// Arrival is a job waiting for the gate: what it asks for, in the terms the
// scheduler in front of the fleet counts.
type Arrival struct {
	Key, Cluster, Team, Project, Queue, Pool, Workload, Model string
	// Card is the card type it asked for; "" accepts any whole-GPU card (with
	// MIGProfile: any card that has instances of it).
	Card string
	GPUs int
	// MIGProfile, when set, is the MIG instance profile it asks for
	// ("1g.5gb"); GPUs is then 1, one instance.
	MIGProfile string
	// Attempt is 1 for a first submission; RerunOf is the attempt this one
	// follows (a rerun after a failure, a requeue).
	Attempt int
	RerunOf string
	// PlanS is the run time it would ask for (its time limit), in seconds.
	PlanS int64
	// Interactive: a notebook (its owner is at it or away).
	Interactive bool
	// NodeGPUs is the GPU slots of the cluster's nodes.
	NodeGPUs int
}

// ClusterCapacity is what a gate can hand out in one cluster: the GPU units of
// each card type outside MIG (whole GPUs, and each replica of a time-sliced GPU,
// as the device plugin advertises them), and the MIG instances of each card
// type and profile.
type ClusterCapacity struct {
	Name  string
	Cards map[string]int
	// MIG is the cluster's MIG instances per "<card>/<profile>" (as the
	// scheduler names MIG resources: "A100-40GB/1g.5gb").
	MIG map[string]int
	// Nodes are the cluster's nodes, in the fleet's order, each with its GPU
	// slots (a time-sliced GPU is two) or, partitioned by MIG, its GPUs and
	// their layouts: what a scheduler that places jobs places them on
	// (Fleet.SetPlacer).
	Nodes []NodeCapacity
}

// NodeCapacity is one node: its name, card type and GPU slots, indexed 0 …
// GPUs-1; on a MIG node GPUs is its physical GPUs and MIG each one's layout
// (the profiles of its instances, by index in the layout).
type NodeCapacity struct {
	Name string
	Card string
	GPUs int
	MIG  [][]string
}

// NodeGPUs is where a scheduler placed a job on one node: slot indices on a
// node of whole GPUs, MIG instances on a MIG node.
type NodeGPUs struct {
	Node string
	GPUs []int
	MIG  []MIGSlot
}

// MIGSlot is one MIG instance of a node: its GPU index and its index in that
// GPU's layout (NodeCapacity.MIG).
type MIGSlot struct{ GPU, Index int }

// SetPlacer makes the fleet run an admitted job exactly where placer says the
// scheduler placed it (nil or empty: the fleet places it itself). A job whose
// assigned GPUs are not all free in the fleet (a process the scheduler does not
// know holds one) is placed by the fleet instead, and counted (PlacementMisses).
func (f *Fleet) SetPlacer(placer func(key string) []NodeGPUs) {
	f.placer = placer
	if f.missWhy == nil {
		f.missWhy = map[string]int{}
	}
}

// PlacementMissReasons counts the misses by what held a placed GPU
// ("zombie", "hand-started process", "stray process", "node down", …).
func (f *Fleet) PlacementMissReasons() map[string]int { return maps.Clone(f.missWhy) }

// PlacementMisses is how many admitted jobs could not run where the scheduler
// placed them, and PlacementsRun how many did.
func (f *Fleet) PlacementMisses() (missed, run int) { return f.placeMissed, f.placeRun }

// MIGPlacementsRun is how many of the jobs run where the scheduler placed
// them ran on the MIG instances it gave them.
func (f *Fleet) MIGPlacementsRun() int { return f.placeRunMIG }

// SetGate puts g in front of the fleet's schedulers (nil removes it: the fleet
// places everything itself again). Set it before the first Advance: jobs queued
// before it are not gated.
func (f *Fleet) SetGate(g Gate) { f.gate = g }

// Capacity returns each cluster's units per card type and MIG instances per
// card and profile that a gate counts, and its nodes.
func (f *Fleet) Capacity() []ClusterCapacity {
	var out []ClusterCapacity
	for _, c := range f.clusters {
		cc := ClusterCapacity{Name: c.name, Cards: map[string]int{}}
		for _, n := range c.nodes {
			if !n.mig {
				cc.Cards[n.cardType] += len(n.slots)
				cc.Nodes = append(cc.Nodes, NodeCapacity{Name: n.name, Card: n.cardType, GPUs: len(n.slots)})
				continue
			}
			nc := NodeCapacity{Name: n.name, Card: n.cardType}
			for i := range n.slots {
				s := &n.slots[i]
				for int(s.gpuIndex) >= len(nc.MIG) {
					nc.MIG = append(nc.MIG, nil)
				}
				nc.MIG[s.gpuIndex] = append(nc.MIG[s.gpuIndex], s.migProfile)
				if cc.MIG == nil {
					cc.MIG = map[string]int{}
				}
				cc.MIG[n.cardType+"/"+s.migProfile]++
			}
			nc.GPUs = len(nc.MIG)
			cc.Nodes = append(cc.Nodes, nc)
		}
		out = append(out, cc)
	}
	return out
}

// gated reports whether j waits for the gate.
func (f *Fleet) gated(j *job) bool {
	return f.gate != nil && j.source != schemas.SourceProcess
}

// Holds reports whether the fleet holds job key for its gate.
func (f *Fleet) Holds(key string) bool { j := f.waiting[key]; return j != nil && j.held }

// Admit lets the queued job key be placed, on card (its card type, when the
// job accepted any; "" leaves its request as it is). The fleet places it at the
// next Advance, as soon as nodes fit it.
func (f *Fleet) Admit(key, card string) error {
	j := f.waiting[key]
	if j == nil {
		if f.runningJobs[key] != nil {
			return nil // admitted already, and running
		}
		return fmt.Errorf("sim: admit job %q: %w", key, ErrUnknownJob)
	}
	if !j.held {
		return nil // admitted already, waiting for nodes
	}
	if card != "" && j.card != "" && j.card != card {
		return fmt.Errorf("sim: admit job %q on %s: it asked for %s", key, card, j.card)
	}
	if card != "" {
		j.card = card
	}
	if f.placer != nil {
		j.assigned = f.placer(key)
	}
	j.held = false
	f.dirty = appendCluster(f.dirty, j.c)
	return nil
}

// arrive tells the gate of j, which submit just queued, and holds it.
func (f *Fleet) arrive(j *job) {
	if !f.gated(j) {
		return
	}
	j.held = true
	if f.waiting == nil {
		f.waiting = map[string]*job{}
	}
	f.waiting[j.key] = j
	f.announce(j)
}

// announce tells the gate of j, which waits for it.
func (f *Fleet) announce(j *job) {
	f.gate.Submitted(Arrival{
		Key: j.key, Cluster: j.c.name, Team: j.team, Project: j.project, Queue: j.queue, Pool: j.pool,
		Workload: j.workload, Model: j.model, Card: j.card, GPUs: j.gpus, MIGProfile: j.migProfile, Attempt: j.attempt, RerunOf: j.rerunOf,
		PlanS: (j.planMs + 999) / 1000, Interactive: j.kind == kindNotebook, NodeGPUs: j.c.gpusPerNode,
	})
}

// unadmit puts back under its gate a job that has not started and that an
// executor stops with status — the scheduler admitted it and took it back
// before the fleet started it (before its resume reached the fleet, or while
// its placed GPUs were not free yet): as Kueue does with a Workload evicted
// before it ran, the job waits suspended again, keeping its submission. The
// gate is told first that the admitted attempt ended — the stop took effect at
// once, nothing of it holds a GPU, so the scheduler may end it and free its
// GPUs now rather than when a grace it gave a running job is over — and then
// of the job as a new arrival. Without the end the arrival came while the
// scheduler still had the key, was refused as queued already and ran
// unadmitted on GPUs the scheduler then gave to another job; without the
// arrival the job waited in the fleet for ever, known to no scheduler. False
// when key is no such job.
func (f *Fleet) unadmit(key, status string) bool {
	j := f.waiting[key]
	if j == nil {
		return false
	}
	j.held, j.assigned, j.missed = true, nil, false
	f.dirty = appendCluster(f.dirty, j.c)
	f.tellEnded(j, status)
	f.announce(j)
	return true
}

// tellEnded tells the gate that j, which it was told of, ended with status.
func (f *Fleet) tellEnded(j *job, status string) {
	if f.gated(j) {
		f.gate.Ended(j.key, status)
	}
}

// scheduleDirty places the jobs admitted since the last event.
func (f *Fleet) scheduleDirty() {
	for _, c := range f.dirty {
		f.schedule(c)
	}
	f.dirty = f.dirty[:0]
}

func appendCluster(cs []*cluster, c *cluster) []*cluster {
	if slices.Contains(cs, c) {
		return cs
	}
	return append(cs, c)
}
