package billing

import (
	"testing"
)

// TestFailuresSeparatePoolReclaims: an attempt the pool's scheduler reclaimed
// (an ok reclaim action on it) is counted as ReasonPoolReclaim, not among other
// preemptions, and the table lists no succeeded attempts (they count in the
// total the shares are of).
func TestFailuresSeparatePoolReclaims(t *testing.T) {
	s := loadFleet(t)
	if err := s.Exec(t.Context(), `INSERT INTO actions (ts, id, decision, outcome, reason, policy, job, attempt, executor)
VALUES ('2026-11-29 08:30:00.000', 'reclaim-ft-1', 'reclaim', 'ok', 'borrowed GPUs reclaimed for a queue under its quota', 'reclaim-borrowed', 'k8s/nlp/ft-1', 1, 'sim')`, nil); err != nil {
		t.Fatal(err)
	}
	r, err := Build(t.Context(), s, november(t))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int64{}
	var listed int64
	for _, f := range r.Failures {
		seen[f.Reason] = f.Attempts
		listed += f.Attempts
	}
	if seen[ReasonPoolReclaim] != 1 || seen["preempted"] != 0 {
		t.Errorf("failures %+v: want the reclaimed attempt as %s, none as preempted", r.Failures, ReasonPoolReclaim)
	}
	for _, bad := range []string{"", "succeeded"} {
		if _, ok := seen[bad]; ok {
			t.Errorf("failures list %q", bad)
		}
	}
	if r.EndedAttempts <= listed {
		t.Errorf("%d ended attempts, %d listed: the succeeded ones must count in the total, not in the table", r.EndedAttempts, listed)
	}
}

// TestTeamRerunCostPricedWithoutReruns: a team's total failed-rerun cost is not
// "unpriced" because a line with no failed reruns has an unpriced hour; a line
// whose reruns are unpriced still makes it unpriced.
func TestTeamRerunCostPricedWithoutReruns(t *testing.T) {
	priced := Line{Team: "nlp", Figures: Figures{Cost: ptr(10), IdleCost: ptr(1), FailedRerunCost: ptr(4), FailedRerunGPUHours: 1, Currency: "USD"}}
	noReruns := Line{Team: "nlp", Figures: Figures{GPUHours: 2, UnpricedGPUHours: 2, Currency: "USD"}}
	tot, _ := sumLines([]Line{priced, noReruns})
	if tot.FailedRerunCost == nil || *tot.FailedRerunCost != 4 {
		t.Errorf("failed-rerun cost %v, want 4 (the unpriced line had no reruns)", tot.FailedRerunCost)
	}
	unpricedReruns := Line{Team: "nlp", Figures: Figures{FailedRerunGPUHours: 1, Currency: "USD"}}
	if tot, _ := sumLines([]Line{priced, unpricedReruns}); tot.FailedRerunCost != nil {
		t.Errorf("failed-rerun cost %v, want unpriced (a rerun had no price)", *tot.FailedRerunCost)
	}
}
