package engine

import (
	"time"

	"github.com/gpupool/gpupool/scheduler/placement"
)

// Card is a GPU card type (a Kueue ResourceFlavor): the unit quotas and capacity
// are counted in.
type Card struct {
	// Name is the card type as reports name it, e.g. "H100-80GB" (schemas.CardType).
	Name string `yaml:"name" json:"name"`
	// MemoryGiB is one card's memory; a job asking for "any card with ≥ N GiB"
	// may run on it when MemoryGiB ≥ N.
	MemoryGiB int `yaml:"memory_gib" json:"memory_gib"`
	// Rank orders cards by cost, cheapest lowest. A job that accepts several card
	// types gets the lowest-ranked one that is free, so small jobs do not hold
	// high-end cards while a fitting smaller one is idle.
	Rank int `yaml:"rank" json:"rank"`
}

// Cluster is one scheduling domain and the GPUs it has of each card type. A job
// runs in one cluster: admission never places more GPUs of a card type in a
// cluster than it has.
type Cluster struct {
	Name string `yaml:"name" json:"name"`
	// Capacity is GPUs per card type. With Nodes it may be left out: the
	// nodes' whole GPUs are the capacity (one written beside them must agree).
	Capacity map[string]int `yaml:"capacity" json:"capacity"`
	// Nodes, when listed, are the cluster's machines: jobs are admitted onto
	// concrete nodes and GPUs (scheduler/placement), a gang whole or not at all,
	// with reservations and backfill. Either every cluster lists its nodes or
	// none does (then GPUs are counted per card type, as before).
	Nodes []NodeGroup `yaml:"nodes,omitempty" json:"nodes,omitempty"`
	// Teams, when listed, are the only teams whose jobs the cluster takes (its
	// boundary: a job of another team is never placed there); empty: every team.
	Teams []string `yaml:"teams,omitempty" json:"teams,omitempty"`
	// Labels describe the cluster for data locality (e.g. region: eu): a job
	// with JobSpec.Locality runs only where every pair of it is here.
	Labels map[string]string `yaml:"labels,omitempty" json:"labels,omitempty"`
}

// Pool is a share of the fleet governed by one set of rules (the seed's five:
// experimental training, production training, online inference, batch inference,
// dev/test).
type Pool struct {
	Name string `yaml:"name" json:"name"`
	// Capacity is the pool's GPUs per card type: its queues' nominal quotas must fit
	// in it, and the pools' capacities must fit in the clusters'.
	Capacity map[string]int `yaml:"capacity" json:"capacity"`
	// MayLend lets the pool's queues lend their idle nominal quota to their
	// cohort; false keeps it for the pool alone (lending_limit 0).
	MayLend bool `yaml:"may_lend" json:"may_lend"`
	// MayBorrow lets the pool's queues run past their nominal quota on capacity
	// their cohort lends.
	MayBorrow bool `yaml:"may_borrow" json:"may_borrow"`
	// Preemptible lets the scheduler preempt the pool's jobs to reclaim borrowed
	// capacity or for higher-priority work. Online inference is not.
	Preemptible bool `yaml:"preemptible" json:"preemptible"`
	// Protected exempts the pool from every automatic action: no preemption, no
	// reclaim, no kill, no notice, whatever a policy or a quota says. Decisions
	// about its jobs are still recorded (as skips, with the reason), and a
	// policy's recommend step, which changes nothing, is recorded as usual.
	Protected bool `yaml:"protected" json:"protected"`
	// MaxJobDuration bounds a job's run: a longer time limit is refused at submit
	// and a job running past it is stopped (0: no bound).
	MaxJobDuration time.Duration `yaml:"max_job_duration" json:"max_job_duration"`
	// ReclaimGrace is how long a checkpointable job may keep its GPUs to checkpoint
	// once the scheduler decides to reclaim them.
	ReclaimGrace time.Duration `yaml:"reclaim_grace" json:"reclaim_grace"`
}

// PriorityClass names a priority: higher Value is admitted first and may preempt
// lower values.
type PriorityClass struct {
	Name  string `yaml:"name" json:"name"`
	Value int    `yaml:"value" json:"value"`
}

// Quota is a queue's share of one card type (Kueue's nominalQuota, borrowingLimit
// and lendingLimit; Volcano's guarantee/deserved/capability are nominal,
// nominal, and nominal + borrowing limit).
type Quota struct {
	// Nominal is the GPUs the queue is guaranteed: borrowers in its cohort are
	// preempted to give them back when the queue has work for them.
	Nominal int `yaml:"nominal" json:"nominal"`
	// BorrowingLimit is the most GPUs beyond Nominal the queue may borrow from its
	// cohort; nil: no limit but the cohort's idle quota.
	BorrowingLimit *int `yaml:"borrowing_limit,omitempty" json:"borrowing_limit,omitempty"`
	// LendingLimit is the most of its idle nominal quota the queue lends to its
	// cohort; nil: all of it. The rest is kept idle for the queue's own bursts.
	LendingLimit *int `yaml:"lending_limit,omitempty" json:"lending_limit,omitempty"`
}

// Queue is where a team's or project's jobs wait inside a pool (a Kueue
// ClusterQueue with its LocalQueue; a Volcano queue).
type Queue struct {
	Name string `yaml:"name" json:"name"`
	Pool string `yaml:"pool" json:"pool"`
	// Team and Project, when set, are the only ones who may submit to the queue.
	Team    string `yaml:"team" json:"team,omitempty"`
	Project string `yaml:"project" json:"project,omitempty"`
	// Cohort names the queues that lend each other idle nominal quota; "" means
	// the queue shares with nobody.
	Cohort string `yaml:"cohort" json:"cohort,omitempty"`
	// Weight is the queue's fair-sharing weight: pending jobs go in order of their
	// queue's dominant share divided by its weight, so a queue of weight 2 gets
	// about twice the GPUs of one of weight 1 when both want more.
	Weight float64 `yaml:"weight" json:"weight"`
	// Quota is per card type; a card type missing here is one the queue has no
	// nominal quota of (it may still borrow it).
	Quota map[string]Quota `yaml:"quota" json:"quota"`
	// DefaultPriorityClass is the class of jobs that name none ("": the model's).
	DefaultPriorityClass string `yaml:"default_priority_class" json:"default_priority_class,omitempty"`
	// PriorityClasses are the classes a team may name for its jobs in the queue
	// (Kueue's WorkloadPriorityClass, a ResourceQuota's priority scope); empty:
	// those whose value is at most the queue's default's, so that no team can
	// jump ahead of, or preempt, other teams' work by asking. It must hold the
	// queue's default. Operators and admins may name any class; jobs the
	// scheduler queues itself (the fleet's, a requeue) keep theirs.
	PriorityClasses []string `yaml:"priority_classes" json:"priority_classes,omitempty"`
}

// Model is the pool's shape: what cards there are and where, how they are split
// into pools and queues, and the priorities jobs may ask for.
type Model struct {
	Cards           []Card          `yaml:"cards" json:"cards"`
	Clusters        []Cluster       `yaml:"clusters" json:"clusters"`
	Pools           []Pool          `yaml:"pools" json:"pools"`
	PriorityClasses []PriorityClass `yaml:"priority_classes" json:"priority_classes"`
	// DefaultPriorityClass is the class of a job that names none.
	DefaultPriorityClass string  `yaml:"default_priority_class" json:"default_priority_class"`
	Queues               []Queue `yaml:"queues" json:"queues"`
	// TopologyLevels are the nodes' topology levels, finest first (e.g.
	// ["nvlink", "rack", "block"]); only with Nodes.
	TopologyLevels []string `yaml:"topology_levels,omitempty" json:"topology_levels,omitempty"`
	// Placement is how jobs that do not fit wait, with Nodes (default:
	// conservative backfill: each gets a reservation in order, and later jobs
	// start only where they delay none).
	Placement placement.PlanConfig `yaml:"placement,omitempty" json:"placement,omitzero"`
}
