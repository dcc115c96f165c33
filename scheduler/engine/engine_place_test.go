package engine

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/scheduler/placement"
)

// placedModel is one cluster of nodes × 8 H100 (no capacity written: the
// nodes give it); queues a (high share) and b in one cohort.
func placedModel(nodes int) Model {
	return Model{
		Cards:    []Card{{Name: "H100-80GB", MemoryGiB: 80, Rank: 4}},
		Clusters: []Cluster{{Name: "c1", Nodes: []NodeGroup{{Name: "n", Count: nodes, Card: "H100-80GB", GPUs: 8}}}},
		Pools: []Pool{{Name: "train", Capacity: map[string]int{"H100-80GB": 8 * nodes}, MayLend: true, MayBorrow: true,
			Preemptible: true, MaxJobDuration: 24 * time.Hour}},
		PriorityClasses:      []PriorityClass{{Name: "critical", Value: 1000}, {Name: "normal", Value: 100}, {Name: "low", Value: 10}},
		DefaultPriorityClass: "normal",
		Queues: []Queue{
			{Name: "a", Pool: "train", Cohort: "t", Weight: 1, Quota: map[string]Quota{"H100-80GB": {Nominal: 8*nodes - 4}},
				PriorityClasses: []string{"critical", "normal", "low"}},
			{Name: "b", Pool: "train", Cohort: "t", Weight: 1, Quota: map[string]Quota{"H100-80GB": {Nominal: 4}}},
		},
	}
}

func mustEngine(t *testing.T, m Model) *Engine {
	t.Helper()
	e, err := New(m)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func mustSubmit(t *testing.T, e *Engine, spec JobSpec, now time.Time) *Job {
	t.Helper()
	j, err := e.Submit(spec, now)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// checkPlacements counts the GPUs j's placement names and checks none is named twice
// across the running jobs.
func checkPlacements(t *testing.T, e *Engine) {
	t.Helper()
	seen := map[string]string{}
	for _, j := range e.jobs {
		n := 0
		for _, a := range j.Placement {
			for _, g := range a.GPUs {
				k := a.Node + "/" + string(rune('0'+g))
				if o, dup := seen[k]; dup {
					t.Fatalf("GPU %s given to %s and %s", k, o, j.ID)
				}
				seen[k] = j.ID
				n++
			}
		}
		if j.Running() && n != j.Spec.GPUs {
			t.Fatalf("%s runs on %d GPUs (%v), asked %d", j.ID, n, j.Placement, j.Spec.GPUs)
		}
		if !j.Running() && n != 0 {
			t.Fatalf("%s is %s but holds %v", j.ID, j.State, j.Placement)
		}
	}
}

func TestPlacedModelValidation(t *testing.T) {
	m := placedModel(2)
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	m.Clusters[0].Capacity = map[string]int{"H100-80GB": 20}
	err := m.Validate()
	if err == nil || !strings.Contains(err.Error(), "clusters[0].capacity.H100-80GB: 20, but the cluster's nodes have 16") {
		t.Fatalf("capacity disagreeing with the nodes: %v", err)
	}
	m = placedModel(2)
	m.Clusters[0].Nodes[0].GPUs = 65
	if err := m.Validate(); err == nil || !strings.Contains(err.Error(), "nodes: clusters[0].nodes[0].gpus") {
		t.Fatalf("a bad node: %v", err)
	}
	m = placedModel(2)
	m.Clusters = append(m.Clusters, Cluster{Name: "c2", Capacity: map[string]int{"H100-80GB": 8}})
	if err := m.Validate(); err == nil || !strings.Contains(err.Error(), "clusters[1].nodes: cluster c2 lists no nodes") {
		t.Fatalf("a cluster without nodes beside one with: %v", err)
	}
}

func TestPlacedGangWholeOrNothing(t *testing.T) {
	e := mustEngine(t, placedModel(2))
	// 5 GPUs on each node: 6 free in all, 3 per node.
	for range 2 {
		mustSubmit(t, e, JobSpec{Team: "t", Queue: "a", GPUs: 5, GPUsPerNode: 5}, t0)
	}
	e.Schedule(t0)
	gang := mustSubmit(t, e, JobSpec{Team: "t", Queue: "a", GPUs: 4, GPUsPerNode: 4}, t0)
	e.Schedule(t0)
	if gang.State != StateQueued || len(gang.Placement) != 0 {
		t.Fatalf("a 4-GPU one-node gang with 3 free per node: %s on %v", gang.State, gang.Placement)
	}
	if !strings.Contains(gang.WaitReason, "placement:") {
		t.Fatalf("wait reason %q", gang.WaitReason)
	}
	// A 6-GPU job with no per-node shape takes 3 + 3: whole, over two nodes.
	split := mustSubmit(t, e, JobSpec{Team: "t", Queue: "b", GPUs: 4}, t0)
	e.Schedule(t0)
	if split.State != StateAdmitted || len(split.Placement) != 2 {
		t.Fatalf("4 GPUs over two nodes: %s on %v", split.State, split.Placement)
	}
	checkPlacements(t, e)
}

// TestPlacedStarvation: an 8-GPU job behind a stream of 1-GPU jobs on a full
// fleet gets a reservation and starts by it.
func TestPlacedStarvation(t *testing.T) {
	e := mustEngine(t, placedModel(2))
	now := t0
	var small []*Job
	for range 16 {
		small = append(small, mustSubmit(t, e, JobSpec{Team: "t", Queue: "a", GPUs: 1, TimeLimitS: 3600}, now))
	}
	e.Schedule(now)
	big := mustSubmit(t, e, JobSpec{Team: "t", Queue: "a", GPUs: 8, GPUsPerNode: 8, TimeLimitS: 7200}, now.Add(time.Minute))
	var waited []string
	for step := 1; step <= 30 && big.State == StateQueued; step++ {
		now = t0.Add(time.Duration(step) * 5 * time.Minute)
		// The oldest small job ends; a new one arrives.
		for _, j := range small {
			if j.Running() {
				if _, err := e.Finish(j.ID, "succeeded", now); err != nil {
					t.Fatal(err)
				}
				break
			}
		}
		small = append(small, mustSubmit(t, e, JobSpec{Team: "t", Queue: "a", GPUs: 1, TimeLimitS: 3600}, now))
		// As the service does: the executor stops what ran past its limit,
		// and the pass runs again.
		for _, d := range e.Schedule(now) {
			if d.Kind == DecisionExpire {
				if err := e.Confirm(d.Job.ID); err != nil {
					t.Fatal(err)
				}
			}
		}
		e.Schedule(now)
		checkPlacements(t, e)
		if big.State == StateQueued {
			waited = append(waited, big.WaitReason)
			if big.ExpectedStart.IsZero() || big.ExpectedStart.After(t0.Add(time.Hour)) {
				t.Fatalf("at %s: expected start %s, want by %s (%s)", now, big.ExpectedStart, t0.Add(time.Hour), big.WaitReason)
			}
		}
	}
	if big.State != StateAdmitted {
		t.Fatalf("the 8-GPU job never started: %s", big.WaitReason)
	}
	if big.AdmitTime.After(t0.Add(time.Hour)) {
		t.Fatalf("started at %s, past its reservation", big.AdmitTime)
	}
	if len(waited) == 0 || !strings.Contains(waited[0], "reserved") {
		t.Fatalf("wait reasons %q", waited)
	}
	if len(big.Placement) != 1 || len(big.Placement[0].GPUs) != 8 {
		t.Fatalf("placement %v", big.Placement)
	}
}

// TestPlacedRestartRestores: a restart puts running jobs back on their GPUs.
func TestPlacedRestartRestores(t *testing.T) {
	m := placedModel(2)
	e := mustEngine(t, m)
	a := mustSubmit(t, e, JobSpec{Team: "t", Queue: "a", GPUs: 6, GPUsPerNode: 6}, t0)
	b := mustSubmit(t, e, JobSpec{Team: "t", Queue: "b", GPUs: 3, TimeLimitS: 3600}, t0)
	e.Schedule(t0)
	if a.State != StateAdmitted || b.State != StateAdmitted {
		t.Fatalf("%s %s", a.State, b.State)
	}
	saved := savedOverJSON(t, e)
	e2 := mustEngine(t, m)
	if dropped, unplaced := e2.Restore(e.Seq(), saved); len(dropped) > 0 || len(unplaced) > 0 {
		t.Fatalf("dropped %v, unplaced %v", dropped, unplaced)
	}
	for _, j := range []*Job{a, b} {
		p, ok := e2.place.st.Placed(j.ID)
		if !ok {
			t.Fatalf("%s not placed after the restart", j.ID)
		}
		var want []placement.NodeAlloc
		want = append(want, j.Placement...)
		if got := p.Nodes(); len(got) != len(want) || got[0].Node != want[0].Node || len(got[0].GPUs) != len(want[0].GPUs) {
			t.Fatalf("%s restored on %v, was on %v", j.ID, got, want)
		}
	}
	// 7 GPUs are free (2 + 5): a one-node 6 does not fit; 5 on one node does.
	c := mustSubmit(t, e2, JobSpec{Team: "t", Queue: "a", GPUs: 6, GPUsPerNode: 6}, t0)
	d := mustSubmit(t, e2, JobSpec{Team: "t", Queue: "a", GPUs: 2, GPUsPerNode: 2}, t0)
	e2.Schedule(t0)
	if c.State != StateQueued || d.State != StateAdmitted {
		t.Fatalf("after the restart: 6 on one node %s, 2 on one node %s", c.State, d.State)
	}
	checkPlacements(t, e2)
	// The restored end (b's time limit) gives c's reservation its start.
	if !c.ExpectedStart.Equal(t0.Add(time.Hour)) {
		t.Fatalf("c expected at %s, want %s (%s)", c.ExpectedStart, t0.Add(time.Hour), c.WaitReason)
	}
}

// TestPlacedPreemptFreesGang: preemption stops a whole gang, and every GPU of
// it comes back.
func TestPlacedPreemptFreesGang(t *testing.T) {
	e := mustEngine(t, placedModel(2))
	low := mustSubmit(t, e, JobSpec{Team: "t", Queue: "a", GPUs: 12, PriorityClass: "low"}, t0)
	e.Schedule(t0)
	other := mustSubmit(t, e, JobSpec{Team: "t", Queue: "a", GPUs: 4, PriorityClass: "low"}, t0.Add(time.Second))
	e.Schedule(t0.Add(time.Second))
	if low.State != StateAdmitted || len(low.Placement) != 2 || other.State != StateAdmitted {
		t.Fatalf("low %s on %v, other %s", low.State, low.Placement, other.State)
	}
	hi := mustSubmit(t, e, JobSpec{Team: "t", Queue: "a", GPUs: 8, GPUsPerNode: 8, PriorityClass: "critical"}, t0.Add(time.Minute))
	now := t0.Add(time.Minute)
	var victims []string
	for _, d := range e.Schedule(now) {
		if d.Kind == DecisionPreempt {
			victims = append(victims, d.Job.ID)
		}
	}
	if len(victims) != 1 || victims[0] != low.ID {
		t.Fatalf("victims %v, want the 12-GPU gang %s alone", victims, low.ID)
	}
	if err := e.Confirm(low.ID); err != nil {
		t.Fatal(err)
	}
	e.Schedule(now)
	if low.State != StateQueued || len(low.Placement) != 0 {
		t.Fatalf("the gang after its stop: %s on %v", low.State, low.Placement)
	}
	if _, ok := e.place.st.Placed(low.ID); ok {
		t.Fatal("the gang still holds GPUs")
	}
	if hi.State != StateAdmitted {
		t.Fatalf("the critical job: %s (%s)", hi.State, hi.WaitReason)
	}
	checkPlacements(t, e)
}

// TestPlacedHoldOutside: a GPU held outside the scheduler (a process started by
// hand) is placed on by no job until it is freed; holding a GPU the engine gave
// to a job is an error naming the job (the pictures differ); a job that needs
// the held GPU still gets a reservation, from after the engine's jobs reach
// their limits (what holds it outside the scheduler may never end: a
// reservation takes the engine's jobs' GPUs first), and Reserved names its GPUs.
func TestPlacedHoldOutside(t *testing.T) {
	e := mustEngine(t, placedModel(1))
	if err := e.HoldOutside("n0", 3, true); err != nil {
		t.Fatal(err)
	}
	small := mustSubmit(t, e, JobSpec{Team: "t", Queue: "a", GPUs: 4, GPUsPerNode: 4, TimeLimitS: 3600}, t0)
	e.Schedule(t0)
	if small.State != StateAdmitted || slices.Contains(small.Placement[0].GPUs, 3) {
		t.Fatalf("4 GPUs with GPU 3 held outside: %s on %v", small.State, small.Placement)
	}
	if err := e.HoldOutside("n0", small.Placement[0].GPUs[0], true); err == nil || !strings.Contains(err.Error(), small.ID) {
		t.Fatalf("holding a GPU the engine gave to %s: %v", small.ID, err)
	}
	// 4 GPUs fit once small ends: reserved on its GPUs, not on the held one.
	four := mustSubmit(t, e, JobSpec{Team: "t", Queue: "b", GPUs: 4, GPUsPerNode: 4}, t0)
	e.Schedule(t0)
	if r := e.Reserved(); four.State != StateQueued || !four.ExpectedStart.Equal(t0.Add(time.Hour)) || len(r) != 1 || slices.Contains(r[0].GPUs, 3) {
		t.Fatalf("4 GPUs on a node with 3 free: %s, expected start %v, reserved %v (%s)", four.State, four.ExpectedStart, r, four.WaitReason)
	}
	if _, err := e.Finish(four.ID, "cancelled", t0); err != nil {
		t.Fatal(err)
	}
	big := mustSubmit(t, e, JobSpec{Team: "t", Queue: "b", GPUs: 8, GPUsPerNode: 8}, t0)
	e.Schedule(t0)
	if big.State != StateQueued || !big.ExpectedStart.After(t0.Add(time.Hour)) {
		t.Fatalf("8 GPUs on a node with GPU 3 held outside: %s, expected start %v (%s)", big.State, big.ExpectedStart, big.WaitReason)
	}
	if r := e.Reserved(); len(r) != 1 || !slices.Contains(r[0].GPUs, 3) {
		t.Fatalf("reserved %v, want GPU 3 of n0 among them", r)
	}
	if err := e.HoldOutside("n0", 3, false); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Finish(small.ID, "succeeded", t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	e.Schedule(t0.Add(time.Minute))
	if big.State != StateAdmitted || !slices.Contains(big.Placement[0].GPUs, 3) {
		t.Fatalf("GPU 3 freed: %s on %v", big.State, big.Placement)
	}
	checkPlacements(t, e)
}

// TestPlacedReservationKeepsItsPlace: a job that holds a reservation stays ahead
// of jobs that arrive after it, even from a queue with a smaller share: the
// newcomer may not take the reserved GPUs with a limit past the reservation's
// start, so the start does not move out, and the reserved job starts at it.
func TestPlacedReservationKeepsItsPlace(t *testing.T) {
	e := mustEngine(t, placedModel(1))
	small := mustSubmit(t, e, JobSpec{Team: "t", Queue: "a", GPUs: 4, GPUsPerNode: 4, TimeLimitS: 3600}, t0)
	e.Schedule(t0)
	big := mustSubmit(t, e, JobSpec{Team: "t", Queue: "a", GPUs: 8, GPUsPerNode: 8}, t0)
	e.Schedule(t0)
	if big.State != StateQueued || !big.ExpectedStart.Equal(t0.Add(time.Hour)) {
		t.Fatalf("8 GPUs behind a 1 h job: %s, expected start %v (%s)", big.State, big.ExpectedStart, big.WaitReason)
	}
	// Queue b uses nothing: by fair share alone it would go first.
	late := mustSubmit(t, e, JobSpec{Team: "t", Queue: "b", GPUs: 4, GPUsPerNode: 4}, t0.Add(time.Minute))
	e.Schedule(t0.Add(time.Minute))
	if late.State != StateQueued || !big.ExpectedStart.Equal(t0.Add(time.Hour)) {
		t.Fatalf("a 24 h job arriving behind the reservation: %s on %v; reserved job expected at %v (%s)",
			late.State, late.Placement, big.ExpectedStart, big.WaitReason)
	}
	if _, err := e.Finish(small.ID, "succeeded", t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	e.Schedule(t0.Add(time.Hour))
	// Started (queue b then reclaims the 4 GPUs it borrowed from b: reclaiming).
	if !big.Running() || !big.AdmitTime.Equal(t0.Add(time.Hour)) {
		t.Fatalf("reservation's start reached: %s at %v (%s)", big.State, big.AdmitTime, big.WaitReason)
	}
	checkPlacements(t, e)
}
