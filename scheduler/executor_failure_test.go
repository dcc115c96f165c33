package scheduler

import (
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

func zombieFinding(id string) schemas.Finding {
	return schemas.Finding{ID: id, Episode: 1, Kind: schemas.KindZombie, Pool: "dev", Node: "gpu-a-001", PID: 4242, Since: t0, FirstSeen: t0}
}

// TestRefusedKillSkippedOnce: a kill the executor refuses is recorded once as
// skipped, with the reason, and never asked for again, even after a restart.
func TestRefusedKillSkippedOnce(t *testing.T) {
	h := newHarness(t, testConfig())
	h.exec.refuse = true
	h.exec.owner = processIn("dev")
	h.addFindings(zombieFinding("z1"))
	h.clock.advance(10 * time.Minute)
	for range 5 {
		h.pass()
		h.clock.advance(10 * time.Second)
	}
	h.start(testConfig())
	h.addFindings(zombieFinding("z1"))
	h.pass()
	rows := h.rows(DecKill)
	if len(rows) != 1 || rows[0].Outcome != OutcomeSkipped || !strings.Contains(rows[0].Reason, "refused by executor fake") ||
		rows[0].Details["class"] != "executor" || rows[0].Tries != 1 {
		t.Fatalf("kill rows %+v", rows)
	}
	if h.exec.calls != 1 {
		t.Errorf("executor called %d times, want 1", h.exec.calls)
	}
}

// TestFailedKillBackoffThenGivenUp: a kill that keeps failing is tried in rounds
// (Retry.Attempts calls each), the next round after a growing backoff, and after
// the last round is reported failed for good; a restart does not try again.
func TestFailedKillBackoffThenGivenUp(t *testing.T) {
	h := newHarness(t, testConfig())
	h.exec.failures = 1000
	h.exec.owner = processIn("dev")
	h.addFindings(zombieFinding("z1"))
	h.clock.advance(10 * time.Minute)
	want := func(calls, rows int) {
		t.Helper()
		if h.exec.calls != calls || len(h.rows(DecKill)) != rows {
			t.Fatalf("%d calls and %d kill rows, want %d and %d", h.exec.calls, len(h.rows(DecKill)), calls, rows)
		}
	}
	h.pass()
	want(3, 1)
	h.clock.advance(10 * time.Second)
	h.pass() // within the 30s backoff
	want(3, 1)
	h.clock.advance(21 * time.Second)
	h.pass()
	want(6, 2)
	h.clock.advance(59 * time.Second)
	h.pass() // the second backoff is 60s
	want(6, 2)
	h.clock.advance(2 * time.Second)
	h.pass()
	want(9, 3)
	last := h.rows(DecKill)[2]
	if last.Outcome != OutcomeFailed || last.Details["final"] != "true" || !strings.Contains(last.Reason, "given up after 3 rounds") {
		t.Errorf("last row %+v", last)
	}
	h.clock.advance(time.Hour)
	h.pass()
	h.start(testConfig())
	h.addFindings(zombieFinding("z1"))
	h.pass()
	want(9, 3)
}

// TestRefusedReclaimNotRepeated: a borrower whose executor refuses to stop it
// keeps running; the refusal is recorded once and the engine does not order it
// stopped again every pass.
func TestRefusedReclaimNotRepeated(t *testing.T) {
	h := newHarness(t, testConfig())
	h.exec.refuse = true
	a1 := h.submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 6, Card: "H100-80GB", Workload: schemas.WorkloadTraining})
	h.pass()
	b1 := h.submit(JobSpec{Team: "team-b", Queue: "b", GPUs: 4, Card: "H100-80GB", Workload: schemas.WorkloadTraining})
	for range 4 {
		h.clock.advance(10 * time.Second)
		h.pass()
	}
	wantState(t, h.job(a1.ID), StateAdmitted, 1)
	wantState(t, h.job(b1.ID), StateQueued, 1)
	rows := h.rows(DecReclaim)
	if len(rows) != 1 || rows[0].Outcome != OutcomeSkipped || !strings.Contains(rows[0].Reason, "refused") {
		t.Fatalf("reclaim rows %+v", rows)
	}
	if h.exec.calls != 1 {
		t.Errorf("executor called %d times, want 1", h.exec.calls)
	}
}
