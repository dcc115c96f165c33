package scheduler

import (
	"testing"
	"time"
)

// TestPolicyReclaimGrace: a policy's reclaim of a checkpointable job gives it its
// pool's reclaim grace, as a reclaim for a lender does: the executor is told the
// grace, and the job keeps its GPUs until the grace is over.
func TestPolicyReclaimGrace(t *testing.T) {
	cfg := testConfig()
	cfg.Pools[2].ReclaimGrace = 3 * time.Minute // dev
	h := newHarness(t, cfg)
	dev := h.submit(JobSpec{Team: "x", Queue: "dev", GPUs: 1, Checkpointable: true})
	plain := h.submit(JobSpec{Team: "x", Queue: "dev", GPUs: 1})
	h.pass()
	h.addFindings(idleFinding(dev.ID, "dev"), idleFinding(plain.ID, "dev"))
	h.clock.advance(30 * time.Minute)
	h.pass() // notify
	h.clock.advance(15 * time.Minute)
	h.pass() // reclaim
	wantState(t, h.job(dev.ID), StateReclaiming, 1)
	wantState(t, h.job(plain.ID), StateQueued, 2) // held
	if len(h.exec.graces) != 2 || h.exec.graces[0]+h.exec.graces[1] != 3*time.Minute {
		t.Fatalf("graces told the executor: %v, want 3m for the checkpointable job and none for the other", h.exec.graces)
	}
	for _, r := range h.rows(DecReclaim) {
		if want := map[bool]string{true: "3m0s", false: ""}[jobIDOf(r.Job) == dev.ID]; r.Details["grace"] != want {
			t.Errorf("reclaim row of %s: grace %q, want %q", r.Job, r.Details["grace"], want)
		}
	}
	h.clock.advance(2 * time.Minute)
	h.pass()
	wantState(t, h.job(dev.ID), StateReclaiming, 1)
	h.clock.advance(time.Minute)
	h.pass()
	wantState(t, h.job(dev.ID), StateQueued, 2) // dev work is held until its owner resumes it
}
