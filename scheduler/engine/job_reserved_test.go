package engine

import (
	"testing"
	"time"
)

// TestReservedRecorded: the job at the head that does not fit records the
// nodes its reservation holds and from when; it drops them once admitted.
func TestReservedRecorded(t *testing.T) {
	e := mustEngine(t, placedModel(2))
	now := t0
	small := mustSubmit(t, e, JobSpec{Team: "t", Queue: "a", GPUs: 4, TimeLimitS: 3600}, now)
	e.Schedule(now)
	if small.State != StateAdmitted {
		t.Fatalf("small job %s: %s", small.ID, small.WaitReason)
	}
	big := mustSubmit(t, e, JobSpec{Team: "t", Queue: "a", GPUs: 12, GPUsPerNode: 6, TimeLimitS: 3600}, now)
	e.Schedule(now)
	if big.State != StateQueued || len(big.Reserved) != 2 || !big.ExpectedStart.Equal(now.Add(time.Hour)) {
		t.Fatalf("big job: state %s, reserved %+v from %s (%s); want 2 nodes from %s", big.State, big.Reserved, big.ExpectedStart, big.WaitReason, now.Add(time.Hour))
	}
	n := 0
	for _, a := range big.Reserved {
		n += len(a.GPUs)
	}
	if n != 12 {
		t.Fatalf("reserved %+v: %d GPUs, want 12", big.Reserved, n)
	}
	now = now.Add(time.Hour)
	if _, err := e.Finish(small.ID, "succeeded", now); err != nil {
		t.Fatal(err)
	}
	e.Schedule(now)
	if big.State != StateAdmitted || big.Reserved != nil {
		t.Fatalf("big job: state %s, reserved %+v; want admitted with no reservation", big.State, big.Reserved)
	}
}
