package engine

import "time"

// Pool names the default model uses (DESIGN.md's five, as the simulator names them).
const (
	PoolTrainingExp     = "training-exp"
	PoolTrainingProd    = "training-prod"
	PoolInferenceOnline = "inference-online"
	PoolInferenceBatch  = "inference-batch"
	PoolDev             = "dev"
)

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
