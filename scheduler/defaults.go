package scheduler

import (
	"time"

	"github.com/gpupool/gpupool/scheduler/executor"
	"github.com/gpupool/gpupool/schemas"
)

// Pool names the default model uses (DESIGN.md's five, as the simulator names them).
const (
	PoolTrainingExp     = "training-exp"
	PoolTrainingProd    = "training-prod"
	PoolInferenceOnline = "inference-online"
	PoolInferenceBatch  = "inference-batch"
	PoolDev             = "dev"
)

// DefaultConfig returns the scheduler shaped like the demo fleet (2 clusters of 8
// GPUs of each of four card types), one queue per pool open to every team, and the
// issue's policies: idle dev jobs notified after 30 min and reclaimed 15 min
// later, zombies killed after 10 min, hung jobs notified after 15 min and
// suspended 30 min later (those three in dry-run), wrong cards and
// memory_capacity findings recommended.
func DefaultConfig() Config {
	return Config{
		Listen:     "127.0.0.1:9470",
		Interval:   10 * time.Second,
		Executor:   ExecutorNone,
		Kubernetes: executor.DefaultKubernetesConfig(),
		Slurm:      executor.DefaultSlurmConfig(),
		Agent:      executor.DefaultAgentConfig(),
		Findings:   "none",
		Retry:      RetryConfig{Attempts: 3, Backoff: time.Second, MaxBackoff: 30 * time.Second},
		Model:      DefaultModel(),
		Policies:   DefaultPolicies(),
	}
}

// DefaultModel is the demo fleet's model: cards ranked by price, two clusters,
// the five pools with their rules, five priority classes, one queue per pool.
// The training, batch and dev queues form one cohort that shares idle quota;
// online inference lends its night-time idle cards to that cohort but never
// borrows, is never preempted and is protected from every automatic action.
func DefaultModel() Model {
	const (
		h100, a100l, a100, l40s = "H100-80GB", "A100-80GB", "A100-40GB", "L40S-48GB"
	)
	perCluster := map[string]int{h100: 8, a100l: 8, a100: 8, l40s: 8}
	q := func(name, pool, cohort string, quota map[string]int) Queue {
		qq := map[string]Quota{}
		for card, n := range quota {
			qq[card] = Quota{Nominal: n}
		}
		return Queue{Name: name, Pool: pool, Cohort: cohort, Weight: 1, Quota: qq}
	}
	return Model{
		Cards: []Card{
			{Name: l40s, MemoryGiB: 48, Rank: 1},
			{Name: a100, MemoryGiB: 40, Rank: 2},
			{Name: a100l, MemoryGiB: 80, Rank: 3},
			{Name: h100, MemoryGiB: 80, Rank: 4},
		},
		Clusters: []Cluster{
			{Name: "us-east-a", Capacity: perCluster},
			{Name: "eu-west-b", Capacity: perCluster},
		},
		Pools: []Pool{
			{Name: PoolTrainingExp, Capacity: map[string]int{h100: 8, a100l: 6}, MayLend: true, MayBorrow: true, Preemptible: true,
				MaxJobDuration: 72 * time.Hour, ReclaimGrace: 5 * time.Minute},
			{Name: PoolTrainingProd, Capacity: map[string]int{h100: 6, a100l: 2}, MayLend: true, MayBorrow: true, Preemptible: false,
				MaxJobDuration: 7 * 24 * time.Hour, ReclaimGrace: 10 * time.Minute},
			{Name: PoolInferenceOnline, Capacity: map[string]int{a100l: 2, a100: 4, l40s: 8}, MayLend: true, MayBorrow: false, Preemptible: false,
				Protected: true},
			{Name: PoolInferenceBatch, Capacity: map[string]int{h100: 2, a100l: 4, a100: 4, l40s: 4}, MayLend: true, MayBorrow: true, Preemptible: true,
				MaxJobDuration: 24 * time.Hour, ReclaimGrace: 2 * time.Minute},
			{Name: PoolDev, Capacity: map[string]int{a100l: 2, a100: 8, l40s: 4}, MayLend: true, MayBorrow: true, Preemptible: true,
				MaxJobDuration: 48 * time.Hour},
		},
		PriorityClasses: []PriorityClass{
			{Name: "critical", Value: 1000},
			{Name: "production", Value: 500},
			{Name: "normal", Value: 100},
			{Name: "low", Value: 10},
			{Name: "best-effort", Value: 0},
		},
		DefaultPriorityClass: "normal",
		Queues: []Queue{
			q(PoolTrainingExp, PoolTrainingExp, "shared", map[string]int{h100: 8, a100l: 6}),
			q(PoolTrainingProd, PoolTrainingProd, "shared", map[string]int{h100: 6, a100l: 2}),
			q(PoolInferenceOnline, PoolInferenceOnline, "shared", map[string]int{a100l: 2, a100: 4, l40s: 8}),
			q(PoolInferenceBatch, PoolInferenceBatch, "shared", map[string]int{h100: 2, a100l: 4, a100: 4, l40s: 4}),
			q(PoolDev, PoolDev, "shared", map[string]int{a100l: 2, a100: 8, l40s: 4}),
		},
	}
}

// DefaultPolicies are the examples, each in dry-run until an operator turns
// it on. A first step counts from when the scheduler first saw the finding (never
// from the `since` a finding claims), so the wait before it is the analyzer's
// window for the kind: idle 30 min, zombie 10 min orphaned, hung 15 min flat.
func DefaultPolicies() []Policy {
	return []Policy{
		{
			Name: "dev-idle", Finding: schemas.KindIdle, Pools: []string{PoolDev}, DryRun: true, MaxActionsPerHour: 20,
			Steps: []Step{
				{Action: ActionNotify},
				{Action: ActionReclaim, After: 15 * time.Minute},
			},
			OptOutLabels: map[string]string{"gpupool.io/no-reclaim": "true"},
		},
		{
			Name: "zombie-kill", Finding: schemas.KindZombie, DryRun: true, MaxActionsPerHour: 30,
			Steps:        []Step{{Action: ActionKill}},
			OptOutLabels: map[string]string{"gpupool.io/no-kill": "true"},
		},
		{
			Name: "wrong-card", Finding: schemas.KindWrongCard,
			Steps: []Step{{Action: ActionRecommend}},
		},
		{
			// A job hung in a collective holds all its GPUs and does nothing: its
			// owner is told 15 min after it hung, and 30 min later it is suspended
			// (reclaimed and requeued held, to resume from its checkpoint).
			Name: "hung-suspend", Finding: schemas.KindHung, DryRun: true, MaxActionsPerHour: 10,
			Steps: []Step{
				{Action: ActionNotify},
				{Action: ActionReclaim, After: 30 * time.Minute},
			},
			OptOutLabels: map[string]string{"gpupool.io/no-reclaim": "true"},
		},
		{
			// Memory full, compute low: a working job, over-provisioned. Only
			// recommended (a fitting MIG profile, time-slicing share or smaller
			// card), in every pool, protected ones included: a recommendation
			// changes nothing, and validation refuses a step that would stop it.
			Name: "memory-capacity", Finding: schemas.KindMemoryCapacity,
			Steps: []Step{{Action: ActionRecommend}},
		},
	}
}
