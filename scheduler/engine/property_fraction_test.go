package engine

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gpupool/gpupool/scheduler/placement"
)

// randomFractionModel is randomMIGModel with fraction resources: pool p0 has
// every card's timeslice and mps fractions (1000 × its whole GPUs), its queues
// random nominal quotas of them, the other queues none (they borrow).
func randomFractionModel(r *rand.Rand) Model {
	m := randomMIGModel(r)
	left := map[string]int{}
	for _, c := range m.Cards {
		whole := m.Pools[0].Capacity[c.Name] + m.Pools[1].Capacity[c.Name]
		for _, s := range placement.Sharings {
			k := FractionResource(c.Name, s)
			m.Pools[0].Capacity[k], left[k] = 1000*whole, 1000*whole
		}
	}
	for i, q := range m.Queues {
		if q.Pool != "p0" {
			continue
		}
		for _, k := range slices.Sorted(maps.Keys(left)) {
			n := r.IntN(left[k] + 1)
			left[k] -= n
			m.Queues[i].Quota[k] = Quota{Nominal: n}
		}
	}
	return m
}

// randomFractionSpec is randomMIGSpec, or half the time a fraction.
func randomFractionSpec(r *rand.Rand, e *Engine, m Model) JobSpec {
	spec := randomMIGSpec(r, e, m)
	if r.IntN(2) == 0 {
		return spec
	}
	spec.GPUs, spec.MIGProfile, spec.GPUsPerNode = 0, "", 0
	spec.GPUFraction = []int{100, 250, 500, 750, 1 + r.IntN(999)}[r.IntN(5)]
	spec.Sharing = string(placement.Sharings[r.IntN(2)])
	if spec.Card != "" && r.IntN(2) == 0 {
		spec.Card = ""
	}
	if r.IntN(3) == 0 {
		spec.GPUMemoryMiB = 1 + r.IntN(40*1024)
	}
	return spec
}

// checkWholeAndSlices checks no whole GPU or MIG instance is given twice.
func checkWholeAndSlices(t *testing.T, e *Engine) {
	t.Helper()
	seen := map[string]string{}
	for _, j := range e.jobs {
		for _, a := range j.Placement {
			var keys []string
			for _, g := range a.GPUs {
				keys = append(keys, fmt.Sprintf("%s/%d", a.Node, g))
			}
			for _, s := range a.Slices {
				keys = append(keys, fmt.Sprintf("%s/%d.%d", a.Node, s.GPU, s.Index))
			}
			for _, k := range keys {
				if o, dup := seen[k]; dup {
					t.Fatalf("%s given to %s and %s", k, o, j.ID)
				}
				seen[k] = j.ID
			}
			if j.Spec.GPUFraction > 0 && (len(a.GPUs) > 0 || len(a.Slices) > 0 || len(a.Shares) != 1) {
				t.Fatalf("fraction job %s holds %+v", j.ID, a)
			}
		}
	}
}

// TestRandomFractionStreams drives random fleets (some GPUs partitioned)
// through random streams of whole, MIG and fraction jobs of both sharing
// modes: after every pass no GPU is over-shared or shared by two modes or
// held whole beside its shares, nothing is given twice, quotas hold per card,
// MIG and fraction resource (checkInvariants counts a cluster's shared GPUs
// ⌈Σ/1000⌉ per mode against the card), the journal replays; then every job
// runs.
func TestRandomFractionStreams(t *testing.T) {
	nodeStream{spec: randomFractionSpec, mine: func(j *Job) bool { return j.Spec.GPUFraction > 0 },
		extra: func(t *testing.T, e *Engine) { checkWholeAndSlices(t, e); sharedGPUs(t, e) }}.runMany(t, "fraction", 60, 15, 0x44f, randomFractionModel)
}
