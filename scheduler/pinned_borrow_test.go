package scheduler

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// TestAttackNotPreemptibleBorrow: a team's job that opts out of preemption may
// not run on GPUs its cohort lent (it could keep them forever: borrowed GPUs are
// taken back by preempting the borrower). It waits with the reason, and the same
// job left preemptible borrows; within nominal quota the opt-out is honoured.
func TestAttackNotPreemptibleBorrow(t *testing.T) {
	no := false
	for _, tc := range []struct {
		name        string
		preemptible *bool
		want        JobState
	}{
		{name: "not preemptible: waits", preemptible: &no, want: StateQueued},
		{name: "preemptible: borrows", want: StateAdmitted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, testConfig())
			// Queue b fills its nominal H100 quota, then asks for 2 more: only a's
			// lent quota could give them.
			h.submit(JobSpec{Team: "team-b", Queue: "b", GPUs: 4, Card: "H100-80GB", Workload: schemas.WorkloadTraining})
			h.pass()
			j := h.submit(JobSpec{Team: "team-b", Queue: "b", GPUs: 2, Card: "H100-80GB", Workload: schemas.WorkloadTraining, Preemptible: tc.preemptible})
			h.pass()
			got := h.job(j.ID)
			if got.State != tc.want {
				t.Fatalf("job %s (preemptible %v): %s, want %s (reason %q)", j.ID, tc.preemptible != nil && *tc.preemptible, got.State, tc.want, got.WaitReason)
			}
			if tc.want == StateQueued && !strings.Contains(got.WaitReason, "not preemptible may not borrow") {
				t.Errorf("reason %q does not say a job that is not preemptible may not borrow", got.WaitReason)
			}
		})
	}
	t.Run("not preemptible past nominal: refused at submit", func(t *testing.T) {
		h := newHarness(t, testConfig())
		_, err := h.svc.Submit(t.Context(), JobSpec{Team: "team-b", Queue: "b", GPUs: 6, Card: "H100-80GB", Workload: schemas.WorkloadTraining, Preemptible: &no})
		if !errors.Is(err, ErrOverQuota) || !strings.Contains(err.Error(), "not preemptible may not borrow") {
			t.Fatalf("submit of 6 GPUs, not preemptible, nominal 4: err = %v, want %v saying it may not borrow", err, ErrOverQuota)
		}
	})
	t.Run("not preemptible within nominal: admitted", func(t *testing.T) {
		h := newHarness(t, testConfig())
		j := h.submit(JobSpec{Team: "team-b", Queue: "b", GPUs: 2, Card: "H100-80GB", Workload: schemas.WorkloadTraining, Preemptible: &no})
		h.pass()
		h.clock.advance(time.Minute)
		if got := h.job(j.ID); got.State != StateAdmitted || got.Borrowed != 0 {
			t.Fatalf("job within nominal: %s borrowed %d, want admitted on its own quota", got.State, got.Borrowed)
		}
	})
}
