package engine

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/gpupool/gpupool/scheduler/placement"
	"github.com/gpupool/gpupool/schemas"
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
	iterations := 60
	if testing.Short() {
		iterations = 15
	}
	admits, stops := 0, 0
	for it := range iterations {
		r := rand.New(rand.NewPCG(uint64(it), 0x44f))
		m := randomFractionModel(r)
		boundClusters(&m)
		r2 := rand.New(rand.NewPCG(uint64(it), 0xc1a5))
		e, err := New(m)
		if err != nil {
			t.Fatalf("iteration %d: random model invalid: %v", it, err)
		}
		now := t0
		submitted, finished := map[string]bool{}, map[string]bool{}
		journaled := journaledState{Jobs: []SavedJob{}}
		check := func(step int, decs []Decision) {
			t.Helper()
			for _, d := range decs {
				switch {
				case d.Kind == DecisionStop:
					finished[d.Job.ID] = true
				case d.Job.Spec.GPUFraction == 0:
				case d.Kind == DecisionAdmit:
					admits++
				case d.Kind == DecisionReclaim, d.Kind == DecisionPreempt:
					stops++
				}
			}
			checkInvariants(t, e, submitted, finished)
			checkWholeAndSlices(t, e)
			sharedGPUs(t, e)
			journaled = checkJournalAs(t, e, journaled, waitEstimates)
			if t.Failed() {
				t.Fatalf("iteration %d step %d", it, step)
			}
		}
		for step := range 200 {
			switch x := r.IntN(10); {
			case x < 5:
				spec := randomFractionSpec(r, e, m)
				randomClusters(r2, m, &spec)
				if j, err := e.Submit(spec, now); err == nil {
					submitted[j.ID] = true
				}
			case x < 7:
				finishOne(t, e, r, now, finished)
			default:
				now = now.Add(time.Duration(r.IntN(20)) * time.Minute)
			}
			decs := e.Schedule(now)
			settle(e, decs, func() bool { return r.IntN(10) == 0 })
			check(step, decs)
		}
		for round := 0; len(e.jobs) > 0; round++ {
			if round > 10*len(submitted)+100 {
				for _, j := range e.jobs {
					t.Fatalf("iteration %d: job %s (%+v) never ran: %s", it, j.ID, j.Spec, j.WaitReason)
				}
			}
			now = now.Add(10 * time.Minute)
			decs := e.Schedule(now)
			settle(e, decs, func() bool { return false })
			check(-round, decs)
			for _, q := range e.queues {
				for _, j := range slices.Clone(q.running) {
					if j.State == StateAdmitted {
						_, _ = e.Finish(j.ID, schemas.StatusSucceeded, now)
						finished[j.ID] = true
					}
				}
			}
		}
		if len(finished) != len(submitted) {
			t.Fatalf("iteration %d: %d submitted, %d finished", it, len(submitted), len(finished))
		}
	}
	if admits == 0 || stops == 0 {
		t.Fatalf("the streams admitted %d fraction jobs and stopped %d: they do not exercise fractions", admits, stops)
	}
	t.Logf("fraction jobs admitted %d, reclaimed or preempted %d", admits, stops)
}
