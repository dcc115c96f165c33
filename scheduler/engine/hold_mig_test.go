package engine

import (
	"strings"
	"testing"
)

// TestHoldOutsideMIG: MIG instances held outside the scheduler (one by
// HoldOutsideMIG, a partitioned GPU's all by HoldOutside) are placed on by no
// job until freed; holding an instance the engine gave to a job is an error
// naming the job, as for a whole GPU.
func TestHoldOutsideMIG(t *testing.T) {
	e := mustEngine(t, migModel())
	// GPU 1 of m is 3g.40gb + 2 × 2g.20gb: held whole, its 3g.40gb is not free.
	if err := e.HoldOutside("m", 1, true); err != nil {
		t.Fatal(err)
	}
	big := mustSubmit(t, e, JobSpec{Team: "t", Queue: "b", GPUs: 1, MIGProfile: "3g.40gb", TimeLimitS: 3600}, t0)
	e.Schedule(t0)
	if big.State != StateQueued {
		t.Fatalf("3g.40gb with its GPU held outside: %s on %v", big.State, big.Placement)
	}
	// Six of GPU 0's seven 1g.10gb held one by one: one is left.
	for i := range 6 {
		if err := e.HoldOutsideMIG("m", 0, i, true); err != nil {
			t.Fatal(err)
		}
	}
	two := mustSubmit(t, e, JobSpec{Team: "t", Queue: "b", GPUs: 2, MIGProfile: "1g.10gb", TimeLimitS: 3600}, t0)
	one := mustSubmit(t, e, JobSpec{Team: "t", Queue: "b", GPUs: 1, MIGProfile: "1g.10gb", TimeLimitS: 3600}, t0)
	e.Schedule(t0)
	if two.State != StateQueued {
		t.Fatalf("2 × 1g.10gb with one free: %s on %v", two.State, two.Placement)
	}
	if one.State != StateAdmitted || len(one.Placement) != 1 || len(one.Placement[0].Slices) != 1 || one.Placement[0].Slices[0].Index != 6 {
		t.Fatalf("1 × 1g.10gb: %s on %+v, want instance 6 of GPU 0, the one not held", one.State, one.Placement)
	}
	if err := e.HoldOutsideMIG("m", 0, 6, true); err == nil || !strings.Contains(err.Error(), one.ID) {
		t.Fatalf("holding the instance the engine gave to %s: %v", one.ID, err)
	}
	if err := e.HoldOutside("m", 0, true); err == nil || !strings.Contains(err.Error(), one.ID) {
		t.Fatalf("holding the GPU whose instance the engine gave to %s: %v", one.ID, err)
	}
	if err := e.HoldOutsideMIG("m", 0, 9, true); err == nil || !strings.Contains(err.Error(), "instance 9") {
		t.Fatalf("holding an instance GPU 0 has not: %v", err)
	}
	// Freed, they are placed on again.
	if err := e.HoldOutside("m", 1, false); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := e.HoldOutsideMIG("m", 0, i, false); err != nil {
			t.Fatal(err)
		}
	}
	e.Schedule(t0)
	if big.State != StateAdmitted || two.State != StateAdmitted {
		t.Fatalf("after the holds end: 3g.40gb %s (%s), 2 × 1g.10gb %s (%s)", big.State, big.WaitReason, two.State, two.WaitReason)
	}
	checkMIGPlacements(t, e)
}
