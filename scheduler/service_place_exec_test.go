package scheduler

import (
	"slices"
	"testing"
	"time"

	"github.com/gpupool/gpupool/scheduler/executor"
	"github.com/gpupool/gpupool/scheduler/placement"
	"github.com/gpupool/gpupool/schemas"
)

// placedTestConfig is testConfig with its cluster's GPUs on nodes: two nodes
// of 4 H100 and one of 8 L40S.
func placedTestConfig() Config {
	c := testConfig()
	c.Model.Clusters[0].Capacity = nil
	c.Model.Clusters[0].Nodes = []NodeGroup{
		{Name: "h", Count: 2, Card: "H100-80GB", GPUs: 4},
		{Name: "l0", Card: "L40S-48GB", GPUs: 8},
	}
	return c
}

// wantPlacement checks that the executor was handed the job's placement.
func wantPlacement(t *testing.T, what string, got []executor.NodeGPUs, j Job) {
	t.Helper()
	if len(j.Placement) == 0 {
		t.Fatalf("%s: job %s holds no placement", what, j.ID)
	}
	if len(got) != len(j.Placement) {
		t.Fatalf("%s: placement %+v, want %+v", what, got, j.Placement)
	}
	for i, a := range j.Placement {
		if got[i].Node != a.Node || !slices.Equal(got[i].GPUs, a.GPUs) {
			t.Fatalf("%s: placement %+v, want %+v", what, got, j.Placement)
		}
	}
}

// TestExecutorsGetThePlacement: with nodes, the executor that stops a job is
// told where it ran, and the one that resumes it where it is placed now.
func TestExecutorsGetThePlacement(t *testing.T) {
	kexec := &fakeExec{owner: ownedBy("team-a", "train")}
	h := newHarness(t, placedTestConfig(), WithExecutor(schemas.SourceKubernetes, kexec))
	labels := map[string]string{"gpupool.io/k8s-namespace": "ml", "gpupool.io/k8s-job": "train-1"}
	a1 := h.submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 6, Card: "H100-80GB", Workload: schemas.WorkloadTraining, Labels: labels})
	h.pass()
	ran := h.job(a1.ID)
	wantState(t, ran, StateAdmitted, 1)
	h.clock.advance(time.Minute)
	b1 := h.submit(JobSpec{Team: "team-b", Queue: "b", GPUs: 4, Card: "H100-80GB", Workload: schemas.WorkloadTraining})
	h.pass()
	wantState(t, h.job(a1.ID), StateQueued, 2)
	if len(kexec.stops) != 1 {
		t.Fatalf("kubernetes stops %+v", kexec.stops)
	}
	wantPlacement(t, "stop", kexec.stops[0].Placement, ran)
	if got := h.job(a1.ID).Placement; got != nil {
		t.Fatalf("queued job keeps placement %+v", got)
	}
	// A small job takes two GPUs beside b1's, so that a1 comes back on
	// other GPUs than it ran on.
	h.clock.advance(time.Minute)
	b2 := h.submit(JobSpec{Team: "team-b", Queue: "b", GPUs: 2, Card: "H100-80GB", Workload: schemas.WorkloadTraining})
	h.pass()
	wantState(t, h.job(b2.ID), StateAdmitted, 1)
	if _, err := h.svc.Finish(t.Context(), b1.ID, schemas.StatusSucceeded); err != nil {
		t.Fatal(err)
	}
	h.clock.advance(time.Minute)
	h.pass()
	again := h.job(a1.ID)
	if slices.EqualFunc(ran.Placement, again.Placement, func(a, b placement.NodeAlloc) bool { return a.Node == b.Node && slices.Equal(a.GPUs, b.GPUs) }) {
		t.Fatalf("a1 placed again on the GPUs it ran on (%+v): the test cannot tell the placements apart", again.Placement)
	}
	wantState(t, again, StateAdmitted, 2)
	for range 3 {
		h.clock.advance(time.Minute)
		h.pass()
	}
	if len(kexec.resumes) != 1 {
		t.Fatalf("resumes %+v, want one", kexec.resumes)
	}
	wantPlacement(t, "resume", kexec.resumes[0].Placement, again)
	if n := kexec.resumes[0].Nodes(); !slices.Equal(n, []string{"h0", "h1"}) {
		t.Fatalf("resume nodes %q, want both H100 nodes", n)
	}
}

// TestStartEventNamesEveryNode: a job the engine split over two nodes has both
// in its start event.
func TestStartEventNamesEveryNode(t *testing.T) {
	e, err := NewEngine(placedTestConfig().Model)
	if err != nil {
		t.Fatal(err)
	}
	submit := func(spec JobSpec) *Job {
		t.Helper()
		spec.Card = "H100-80GB"
		j, err := e.Submit(spec, t0)
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	// 3 of each node's 4 H100 taken: 2 GPUs fit only as 1 + 1.
	submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 3, GPUsPerNode: 3})
	submit(JobSpec{Team: "team-b", Queue: "b", GPUs: 3, GPUsPerNode: 3})
	e.Schedule(t0)
	split := submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 2})
	e.Schedule(t0)
	if split.State != StateAdmitted || len(split.Placement) != 2 {
		t.Fatalf("2 GPUs over two nodes: %s on %v (%s)", split.State, split.Placement, split.WaitReason)
	}
	var nodes int
	for _, ev := range (&Service{}).admitEvents(split, t0) {
		nodes += len(ev.Nodes)
	}
	if nodes != 2 {
		t.Fatalf("the start event names %d nodes, want 2", nodes)
	}
}
