package engine

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// migLayouts are whole-GPU MIG layouts by card memory.
var migLayouts = map[int][][]string{
	40: {
		{"1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb"},
		{"3g.20gb", "2g.10gb", "1g.5gb", "1g.5gb"}, {"4g.20gb", "3g.20gb"}, {"7g.40gb"},
	},
	80: {
		{"1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb"},
		{"3g.40gb", "2g.20gb", "2g.20gb"}, {"4g.40gb", "3g.40gb"}, {"7g.80gb"}, {"2g.20gb", "2g.20gb", "2g.20gb", "1g.10gb"},
	},
}

// randomMIGModel draws a pool of nodes, some GPUs partitioned by MIG: 1–2
// clusters of 1–3 node groups (A100-40GB, A100-80GB or H100-80GB), 2 pools
// splitting every resource the nodes have, 2–5 queues with random quotas of
// card types and MIG resources.
func randomMIGModel(r *rand.Rand) Model {
	m := Model{Cards: []Card{{Name: "A100-40GB", MemoryGiB: 40, Rank: 1}, {Name: "A100-80GB", MemoryGiB: 80, Rank: 2}, {Name: "H100-80GB", MemoryGiB: 80, Rank: 3}}}
	for c := range 1 + r.IntN(2) {
		cl := Cluster{Name: fmt.Sprintf("c%d", c)}
		for g := range 1 + r.IntN(3) {
			card := m.Cards[r.IntN(len(m.Cards))]
			ng := NodeGroup{Name: fmt.Sprintf("c%dg%d-", c, g), Count: 1 + r.IntN(3), Card: card.Name, GPUs: 2 + 2*r.IntN(4)}
			for range ng.GPUs {
				var layout []string
				if r.IntN(3) == 0 {
					ls := migLayouts[card.MemoryGiB]
					layout = ls[r.IntN(len(ls))]
				}
				ng.MIG = append(ng.MIG, layout)
			}
			cl.Nodes = append(cl.Nodes, ng)
		}
		m.Clusters = append(m.Clusters, cl)
	}
	total := map[string]int{}
	withCap, _ := m.withNodeCapacity()
	for _, c := range withCap.Clusters {
		for k, n := range c.Capacity {
			total[k] += n
		}
	}
	m.Pools = []Pool{
		{Name: "p0", Capacity: map[string]int{}, MayLend: true, MayBorrow: true, Preemptible: true, MaxJobDuration: 4 * time.Hour},
		{Name: "p1", Capacity: map[string]int{}, MayLend: r.IntN(2) == 0, MayBorrow: true, Preemptible: r.IntN(3) > 0},
	}
	for _, k := range slices.Sorted(maps.Keys(total)) {
		n := r.IntN(total[k] + 1)
		m.Pools[0].Capacity[k], m.Pools[1].Capacity[k] = n, total[k]-n
	}
	m.PriorityClasses = []PriorityClass{{Name: "high", Value: 100}, {Name: "mid", Value: 50}, {Name: "low", Value: 0}}
	m.DefaultPriorityClass = "mid"
	left := []map[string]int{maps.Clone(m.Pools[0].Capacity), maps.Clone(m.Pools[1].Capacity)}
	for q := range 2 + r.IntN(4) {
		p := r.IntN(2)
		qc := Queue{Name: fmt.Sprintf("q%d", q), Pool: m.Pools[p].Name, Weight: 1, Quota: map[string]Quota{}}
		if c := r.IntN(3); c > 0 {
			qc.Cohort = fmt.Sprintf("cohort%d", c)
		}
		for _, k := range slices.Sorted(maps.Keys(left[p])) {
			n := r.IntN(left[p][k] + 1)
			left[p][k] -= n
			quota := Quota{Nominal: n}
			if r.IntN(2) == 0 {
				quota.BorrowingLimit = ptr(r.IntN(6))
			}
			qc.Quota[k] = quota
		}
		m.Queues = append(m.Queues, qc)
	}
	return m
}

// randomMIGSpec draws a job of whole GPUs or of MIG instances.
func randomMIGSpec(r *rand.Rand, e *Engine, m Model) JobSpec {
	q := m.Queues[r.IntN(len(m.Queues))]
	spec := JobSpec{Team: "t", Queue: q.Name, GPUs: 1 + r.IntN(6), PriorityClass: []string{"", "high", "low"}[r.IntN(3)],
		Workload: schemas.WorkloadTraining, TimeLimitS: int64(30+r.IntN(180)) * 60}
	if r.IntN(4) == 0 {
		spec.Preemptible = ptr(false)
	}
	if migs := e.cards[e.nWhole:]; len(migs) > 0 && r.IntN(2) == 0 {
		k := e.nWhole + r.IntN(len(migs))
		spec.MIGProfile, spec.GPUs = e.resProfile[k], 1+r.IntN(4)
		if r.IntN(2) == 0 {
			spec.Card = e.cards[e.resCard[k]].Name
		}
		return spec
	}
	if r.IntN(2) == 0 {
		spec.Card = m.Cards[r.IntN(len(m.Cards))].Name
	}
	if r.IntN(4) == 0 && spec.GPUs%2 == 0 {
		spec.GPUsPerNode = 2
	}
	return spec
}

// TestRandomMIGStreams drives random fleets with partitioned GPUs through
// random streams of whole-GPU and MIG jobs, and checks after every pass that
// no GPU or instance is given twice, MIG jobs hold instances of their profile
// only and whole-GPU jobs whole, unpartitioned GPUs, quotas hold per card and
// MIG resource, and the journal replays; then every job runs.
func TestRandomMIGStreams(t *testing.T) {
	nodeStream{spec: randomMIGSpec, mine: func(j *Job) bool { return j.Spec.MIGProfile != "" }, extra: checkMIGPlacements}.
		runMany(t, "MIG", 120, 30, 0x3161, randomMIGModel)
}

// waitEstimates clears what a placed pass recomputes for a waiting job every
// time without marking it changed (the wait's words and times, its
// reservation): a restart has them again from its first pass.
func waitEstimates(j *SavedJob) {
	if j.State == StateQueued {
		j.WaitReason, j.ExpectedStart, j.Reserved, j.PlacementReason = "", time.Time{}, nil, ""
	}
}
