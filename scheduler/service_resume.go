package scheduler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gpupool/gpupool/scheduler/engine"
	"github.com/gpupool/gpupool/scheduler/executor"
	"github.com/gpupool/gpupool/schemas"
)

// suspended remembers that the executor stopped o's job with a requeue, so that
// its next admission resumes it. The scheduler's own jobs have nothing to resume:
// their owners follow the job events. Call with s.mu held.
func (s *Service) suspended(o order) {
	if o.id == "" || o.kill || !o.requeue || o.target.Source == schemas.SourceScheduler {
		return
	}
	if j, ok := s.engine.Live(o.id); ok {
		s.engine.SetSuspension(j, &engine.Suspension{Target: o.target})
	}
}

// resumeOrders returns a resume for each admitted job an executor suspended,
// unless a failed resume's backoff is not over. Call with s.mu held.
func (s *Service) resumeOrders(now time.Time) []order {
	var out []order
	for _, j := range s.engine.LiveJobs() {
		sp := j.Suspension()
		if j.State != StateAdmitted || sp == nil || now.Before(sp.RetryAt) {
			continue
		}
		r := s.row(j, DecResume, "", fmt.Sprintf("admitted again: resume what %s suspended (attempt %d)", sp.Target.Job, j.Attempt-1), now)
		t := sp.Target
		// It runs where this admission placed it, not where it ran before.
		t.Placement = nodeGPUs(j.Placement)
		switch {
		case j.Resubmits:
			// Its system places it on the card and in the cluster admitted.
			t.Card, t.Cluster = j.Card, j.Cluster
			r.Reason = fmt.Sprintf("admitted on %d %s in %s: %s may start", j.Spec.GPUs, j.Card, j.Cluster, t.Job)
			r.Actor = ActorScheduler
		case j.External != nil:
			r.Reason = fmt.Sprintf("queue %s has room: reactivate %s, suspended when a policy reclaimed it", j.Spec.Queue, sp.Target.Job)
			r.Actor = ActorScheduler
			r.Details = map[string]string{"external": sp.Target.Job}
		}
		out = append(out, order{id: j.ID, row: r, target: t, resume: true, lastRound: sp.Failures+1 >= failedRounds})
	}
	slices.SortFunc(out, func(a, b order) int { return cmp.Compare(a.row.Job, b.row.Job) })
	return out
}

// resumed records a resume's result on its job: done or refused, it is over; a
// failure is tried again after a backoff, failedRounds times in all. It returns
// whether the failure was the last. Call with s.mu held.
func (s *Service) resumed(o order, err error, now time.Time) (final bool) {
	j, ok := s.engine.Live(o.id)
	if !ok || j.Suspension() == nil {
		return false
	}
	s.engine.Touch(j)
	if err == nil {
		s.engine.SetSuspension(j, nil)
		return false
	}
	sp := j.Suspension()
	sp.Failures++
	sp.RetryAt = now.Add(s.roundWait(sp.Failures))
	if sp.Failures >= failedRounds {
		s.engine.SetSuspension(j, nil)
		return true
	}
	return false
}

// resumeDone records a resume's result (see resumed) and returns the row.
func (s *Service) resumeDone(ctx context.Context, o order, row Action, out executor.Outcome, err error) Action {
	s.mu.Lock()
	now := s.now()
	switch {
	case err == nil:
		row.Outcome = OutcomeOK
		if out.Detail != "" {
			row.Reason = join(row.Reason, out.Detail)
		}
	case errors.Is(err, ErrNotOwner):
		row.Outcome, row.Reason = OutcomeSkipped, join(row.Reason, "refused: "+err.Error())
		row.Details = withDetail(row.Details, "class", "ownership")
		err = nil // nothing more to try
	case errors.Is(err, executor.ErrUnsupported), errors.Is(err, executor.ErrNotFound), errors.Is(err, errNoExecutor):
		row.Outcome, row.Reason = OutcomeSkipped, join(row.Reason, fmt.Sprintf("not resumed by %s: %v", cmp.Or(row.Executor, "any executor"), err))
		row.Details = withDetail(row.Details, "class", "executor")
		err = nil // nothing more to try
	default:
		row.Outcome, row.Reason = OutcomeFailed, join(row.Reason, err.Error())
		s.log.Warn("executor resume failed", "job", o.target.Job, "executor", row.Executor, "tries", row.Tries, "err", err)
	}
	if s.resumed(o, err, now) || (err != nil && o.lastRound) {
		row.Details = withDetail(row.Details, "final", "true")
		row.Reason = join(row.Reason, fmt.Sprintf("given up after %d rounds of tries", failedRounds))
	}
	s.mu.Unlock()
	s.emit(ctx, []Action{row}, nil)
	return row
}
