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
