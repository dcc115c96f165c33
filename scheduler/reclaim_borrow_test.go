package scheduler

import (
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// TestBorrowedGoBackFirst: a job that fits its queue's nominal quota, with the
// cluster full, takes back the GPUs another queue borrowed before it preempts
// its own queue's lower-priority job.
func TestBorrowedGoBackFirst(t *testing.T) {
	h := newHarness(t, testConfig())
	low := h.submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 2, Card: "H100-80GB", PriorityClass: "low", Workload: schemas.WorkloadTraining})
	b1 := h.submit(JobSpec{Team: "team-b", Queue: "b", GPUs: 4, Card: "H100-80GB", Workload: schemas.WorkloadTraining})
	b2 := h.submit(JobSpec{Team: "team-b", Queue: "b", GPUs: 2, Card: "H100-80GB", Workload: schemas.WorkloadTraining})
	h.pass()
	if j := h.job(b2.ID); j.State != StateAdmitted || j.Borrowed != 2 {
		t.Fatalf("b2 %s borrowed %d: want admitted on 2 of a's H100", j.State, j.Borrowed)
	}
	h.clock.advance(time.Minute)
	a2 := h.submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 2, Card: "H100-80GB", Workload: schemas.WorkloadTraining})
	h.pass()
	wantState(t, h.job(a2.ID), StateAdmitted, 1)
	wantState(t, h.job(b2.ID), StateQueued, 2)
	wantState(t, h.job(low.ID), StateAdmitted, 1)
	wantState(t, h.job(b1.ID), StateAdmitted, 1)
	if rows := h.rows(DecReclaim); len(rows) != 1 || rows[0].Job != b2.ID {
		t.Fatalf("reclaim rows %+v, want b2's borrowed GPUs", rows)
	}
	if rows := h.rows(DecPreempt); len(rows) != 0 {
		t.Fatalf("preempt rows %+v, want none: a's own job keeps running", rows)
	}
}

// fitModel is one queue with 4 L40S and 4 H100 in one cluster.
func fitModel() Model {
	return Model{
		Cards:                []Card{{Name: "H100-80GB", MemoryGiB: 80, Rank: 4}, {Name: "L40S-48GB", MemoryGiB: 48, Rank: 1}},
		Clusters:             []Cluster{{Name: "c1", Capacity: map[string]int{"H100-80GB": 4, "L40S-48GB": 4}}},
		Pools:                []Pool{{Name: "train", Capacity: map[string]int{"H100-80GB": 4, "L40S-48GB": 4}, Preemptible: true}},
		PriorityClasses:      []PriorityClass{{Name: "normal", Value: 100}, {Name: "high", Value: 200}},
		DefaultPriorityClass: "normal",
		Queues:               []Queue{{Name: "q", Pool: "train", Quota: map[string]Quota{"H100-80GB": {Nominal: 4}, "L40S-48GB": {Nominal: 4}}}},
	}
}

// TestFreedCardsGoToTheJobThatNeedsThem: when GPUs are freed, a small job that
// takes any card does not take the dear ones a waiting job needs while its own
// cheap ones are full — even ahead of it in line; it takes them when nobody
// needs them, or when it outranks the job that does.
func TestFreedCardsGoToTheJobThatNeedsThem(t *testing.T) {
	for _, tc := range []struct {
		name      string
		bigGPUs   int
		smallPrio string
		wantSmall JobState
		wantBig   JobState
	}{
		{name: "big job needs the H100s", bigGPUs: 4, wantSmall: StateQueued, wantBig: StateAdmitted},
		{name: "room for both", bigGPUs: 2, wantSmall: StateAdmitted, wantBig: StateAdmitted},
		{name: "small job outranks it", bigGPUs: 4, smallPrio: "high", wantSmall: StateAdmitted, wantBig: StateQueued},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := NewEngine(fitModel())
			if err != nil {
				t.Fatal(err)
			}
			sub := func(s JobSpec) *Job {
				j, err := e.Submit(s, t0)
				if err != nil {
					t.Fatal(err)
				}
				return j
			}
			cheap := sub(JobSpec{Team: "t", Queue: "q", GPUs: 4, Card: "L40S-48GB"})
			dear := sub(JobSpec{Team: "t", Queue: "q", GPUs: 4, Card: "H100-80GB"})
			e.Schedule(t0)
			small := sub(JobSpec{Team: "t", Queue: "q", GPUs: 2, MinMemoryGiB: 40, PriorityClass: tc.smallPrio})
			big := sub(JobSpec{Team: "t", Queue: "q", GPUs: tc.bigGPUs, Card: "H100-80GB"})
			e.Schedule(t0.Add(time.Minute))
			if small.State != StateQueued || big.State != StateQueued {
				t.Fatalf("admitted with the cluster full: small %s, big %s", small.State, big.State)
			}
			// The H100 job ends: 4 H100 free, the L40S all taken.
			if _, err := e.Finish(dear.ID, schemas.StatusSucceeded, t0.Add(2*time.Minute)); err != nil {
				t.Fatal(err)
			}
			e.Schedule(t0.Add(2 * time.Minute))
			if small.State != tc.wantSmall || big.State != tc.wantBig {
				t.Fatalf("small %s (%s), big %s (%s); want %s, %s", small.State, small.WaitReason, big.State, big.WaitReason, tc.wantSmall, tc.wantBig)
			}
			if tc.wantSmall == StateQueued {
				// The L40S come free: the small job gets one of those.
				if _, err := e.Finish(cheap.ID, schemas.StatusSucceeded, t0.Add(3*time.Minute)); err != nil {
					t.Fatal(err)
				}
				e.Schedule(t0.Add(3 * time.Minute))
				if small.State != StateAdmitted || small.Card != "L40S-48GB" {
					t.Fatalf("small %s on %q, want admitted on L40S-48GB", small.State, small.Card)
				}
			}
		})
	}
}
