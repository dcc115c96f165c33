package scheduler

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/gpupool/gpupool/scheduler/executor"
	"github.com/gpupool/gpupool/schemas"
)

// policyPass resolves the findings (finding.go) and takes every policy step due
// at now.
func (s *Service) policyPass(ctx context.Context, findings []schemas.Finding, now time.Time) {
	seen := s.seeFindings(ctx, findings, now)
	s.mu.Lock()
	due := s.pstate.due(seen, now)
	s.mu.Unlock()
	for _, d := range due {
		if ctx.Err() != nil {
			return
		}
		s.runStep(ctx, d, now)
	}
}

// runStep takes one policy step on one finding, or records why not. Checks, in
// order: an unresolved finding (nothing destructive), a protected pool, an
// opt-out label, the rate limit; then dry-run records what would be done;
// otherwise the action is carried out. A step is marked taken (and never
// repeated for that finding) when it was done or dry-run; a failed one is tried
// again next pass, and a skip is recorded once. The row names the job's team,
// queue and pool as resolved, never as the finding claims them.
func (s *Service) runStep(ctx context.Context, d dueStep, now time.Time) {
	p, f, step := d.policy, &d.f, d.policy.Steps[d.step]
	s.mu.Lock()
	row := Action{
		Time: now, Decision: step.Action, Policy: p.Name, Step: d.step, Job: f.Job, Team: d.res.team, Project: d.res.project,
		Queue: d.res.queue, Pool: d.res.pool, Cluster: f.Cluster, Node: f.Node, PID: f.PID, Card: f.Card, GPUs: len(f.GPUUUIDs),
		FindingID: f.ID, FindingEpisode: f.Episode, FindingKind: string(f.Kind),
	}
	if f.Team != "" && f.Team != row.Team {
		row.Details = withDetail(row.Details, "claimed_team", schemas.Clip(f.Team))
	}
	if f.Pool != "" && f.Pool != row.Pool {
		row.Details = withDetail(row.Details, "claimed_pool", schemas.Clip(f.Pool))
	}
	if d.res.ok {
		row.Details = withDetail(row.Details, "resolved_by", d.res.by)
	}
	labels := maps.Clone(f.Labels)
	var ej *Job
	if d.res.jobID != "" {
		if j, ok := s.engine.Job(d.res.jobID); ok && j.State != StateFinished {
			ej = j
			row.Job, row.Attempt, row.Queue, row.Team, row.Pool = auditKey(j), j.Attempt, j.Spec.Queue, j.Spec.Team, j.Pool
			if labels == nil {
				labels = map[string]string{}
			}
			maps.Copy(labels, j.Spec.Labels)
		}
	}
	// A finding nothing resolved is only evidence: no job of anyone's is
	// disturbed on its word.
	if !d.res.ok && disruptive(step.Action) {
		s.skipOnce(ctx, d, row, "unresolved", fmt.Sprintf("not done: the finding's job could not be resolved (%s); nothing destructive is done on a finding's word", d.res.why))
		return
	}
	// A protected pool gets no automatic action; a recommendation changes nothing
	// and is still recorded (a memory_capacity finding in online inference).
	if pool, ok := s.engine.Pool(row.Pool); ok && pool.Protected && step.Action != ActionRecommend {
		s.skipOnce(ctx, d, row, "protected", fmt.Sprintf("pool %s is protected: no automatic action", row.Pool))
		return
	}
	if l := p.optedOut(labels); l != "" {
		s.skipOnce(ctx, d, row, "opt_out", "the job opted out with label "+l)
		return
	}
	if disruptive(step.Action) && p.MaxActionsPerHour > 0 {
		if n := s.pstate.actionsInWindow(p.Name, row.Pool, now); n >= p.MaxActionsPerHour {
			s.skipOnce(ctx, d, row, "rate_limit", fmt.Sprintf("rate limit: policy %s took %d actions in pool %s in the last hour (max %d); held back",
				p.Name, n, cmp.Or(row.Pool, "(none)"), p.MaxActionsPerHour))
			return
		}
	}
	if p.DryRun {
		row.DryRun, row.Outcome, row.Reason = true, OutcomeDryRun, "dry run: would "+s.describeStep(d, now)
		s.stepTaken(d, row.Pool, now)
		s.mu.Unlock()
		s.emit(ctx, []Action{row}, nil)
		return
	}
	switch step.Action {
	case ActionRecommend:
		row.Outcome, row.Reason = OutcomeOK, cmp.Or(f.Recommendation, "recommend a smaller card or MIG profile")
		s.stepTaken(d, row.Pool, now)
		s.mu.Unlock()
		s.emit(ctx, []Action{row}, nil)
	case ActionNotify:
		s.mu.Unlock()
		s.notify(ctx, d, row, now)
	case ActionReclaim, ActionCancel:
		requeue := step.Action == ActionReclaim
		// A job reclaimed for a HoldOnReclaim kind (hung) is suspended: requeued
		// held until its owner has looked (run again at once, a deadlock usually
		// comes back).
		o := order{row: row, requeue: requeue, hold: requeue && f.Kind.Info().HoldOnReclaim}
		if ej != nil {
			if ej.State != StateAdmitted {
				s.skipOnce(ctx, d, row, "not_running", fmt.Sprintf("job %s is %s", ej.ID, ej.State))
				return
			}
			_, _ = s.engine.StartReclaim(ej.ID, fmt.Sprintf("policy %s: %s finding %s", p.Name, f.Kind, f.ID), requeue, o.hold, now)
			o.id, o.target, o.grace = ej.ID, s.target(ej), ej.ReclaimBy.Sub(now)
			o.target.Finding = f.Kind
			if o.grace > 0 {
				o.row.Details = withDetail(o.row.Details, "grace", o.grace.String())
			}
		} else {
			o.target = d.res.target
			o.target.Labels = labels
			o.target.Pool = d.res.pool
			switch {
			case f.Job == "":
				s.skipOnce(ctx, d, row, "no_job", "the finding names no job to stop")
				return
			case d.res.by == "scheduler":
				s.skipOnce(ctx, d, row, "not_running", fmt.Sprintf("job %s has finished", d.res.jobID))
				return
			}
			if !s.hasExecutor(o.target.Source) {
				s.skipOnce(ctx, d, row, "no_executor", fmt.Sprintf("no executor for %s jobs", cmp.Or(o.target.Source, "unknown")))
				return
			}
		}
		o.lastRound = s.pstate.lastRound(d.key, d.step)
		s.mu.Unlock()
		s.finishStep(ctx, d, s.carryOut(ctx, o), now)
	case ActionKill:
		o := order{row: row, kill: true, target: executor.Target{
			Job: f.Job, Source: cmp.Or(SourceOfJob(f.Job), "process"), Cluster: f.Cluster, Node: f.Node, PID: f.PID, Labels: labels,
			Pool: d.res.pool,
		}}
		if !s.hasExecutor(o.target.Source) {
			s.skipOnce(ctx, d, row, "no_executor", "no executor to kill processes with (agent or sim)")
			return
		}
		o.lastRound = s.pstate.lastRound(d.key, d.step)
		s.mu.Unlock()
		s.finishStep(ctx, d, s.carryOut(ctx, o), now)
	default:
		s.mu.Unlock()
	}
}

// hasExecutor reports whether jobs of source have an executor.
func (s *Service) hasExecutor(source string) bool {
	return s.execs[source] != nil || s.execs[""] != nil
}

// finishStep marks a carried-out step taken when it was done. One the executor
// refused (skipped) is not tried again; one that failed is tried again after a
// backoff, failedRounds times in all.
func (s *Service) finishStep(ctx context.Context, d dueStep, row Action, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch row.Outcome {
	case OutcomeOK:
		s.stepTaken(d, row.Pool, now)
	case OutcomeSkipped:
		s.pstate.noted[noteKey(d.key, d.step, "executor")] = true
	case OutcomeFailed:
		if s.pstate.stepFailed(d.key, d.step, now) {
			s.log.Warn("policy step failed for good", "policy", d.policy.Name, "step", d.step, "finding", d.f.ID, "rounds", failedRounds)
		}
	}
}

// stepTaken marks d taken at now and counts it against the rate limit; call with
// s.mu held.
func (s *Service) stepTaken(d dueStep, pool string, now time.Time) {
	s.pstate.markDone(d.key, d.step, now)
	if disruptive(d.policy.Steps[d.step].Action) {
		s.pstate.countAction(d.policy.Name, pool, now)
	}
}

// skipOnce records that step d was not taken, and why, the first time; later
// passes skip silently. Called with s.mu held; unlocks it.
func (s *Service) skipOnce(ctx context.Context, d dueStep, row Action, class, reason string) {
	k := noteKey(d.key, d.step, class)
	if s.pstate.noted[k] {
		s.mu.Unlock()
		return
	}
	s.pstate.noted[k] = true
	s.mu.Unlock()
	row.Details = map[string]string{"class": class, "action": row.Decision}
	row.Decision, row.Outcome, row.Reason = DecSkip, OutcomeSkipped, reason
	s.emit(ctx, []Action{row}, nil)
}

// notify tells the owner, with a bounded retry.
func (s *Service) notify(ctx context.Context, d dueStep, row Action, now time.Time) {
	n := schemas.Notice{
		Time: now, Team: row.Team, Project: row.Project, Job: row.Job, Policy: d.policy.Name, Finding: d.f,
		Message: fmt.Sprintf("%s %s finding on job %s (pool %s) since %s", d.f.Severity, d.f.Kind, cmp.Or(row.Job, "(none)"),
			cmp.Or(row.Pool, "(none)"), d.start.UTC().Format(time.RFC3339)),
	}
	if next := d.step + 1; next < len(d.policy.Steps) {
		n.NextAction, n.NextAt = d.policy.Steps[next].Action, now.Add(d.policy.Steps[next].After)
		n.Next = fmt.Sprintf("%s at %s unless the finding clears", n.NextAction, n.NextAt.UTC().Format(time.RFC3339))
		n.Message += "; next: " + n.Next
	}
	var err error
	tries := 0
	for tries = 1; ; tries++ {
		if err = s.notifier.Notify(ctx, n); err == nil || tries >= s.cfg.Retry.Attempts {
			break
		}
		if s.sleep(ctx, s.cfg.Retry.wait(tries)) != nil {
			break
		}
	}
	row.Tries = tries
	if err != nil {
		row.Outcome, row.Reason = OutcomeFailed, "notify failed: "+err.Error()
	} else {
		row.Outcome, row.Reason = OutcomeOK, n.Message
		s.mu.Lock()
		s.stepTaken(d, row.Pool, now)
		s.mu.Unlock()
	}
	s.emit(ctx, []Action{row}, nil)
}

// describeStep says what step d would do, for dry-run rows.
func (s *Service) describeStep(d dueStep, now time.Time) string {
	f := &d.f
	switch a := d.policy.Steps[d.step].Action; a {
	case ActionKill:
		return fmt.Sprintf("kill pid %d on %s", f.PID, f.Node)
	case ActionReclaim:
		return fmt.Sprintf("reclaim job %s and requeue it (%s for %s)", f.Job, f.Kind, now.Sub(d.start).Round(time.Minute))
	case ActionCancel:
		return fmt.Sprintf("cancel job %s (%s for %s)", f.Job, f.Kind, now.Sub(d.start).Round(time.Minute))
	case ActionNotify:
		return fmt.Sprintf("notify team %s about job %s", cmp.Or(d.res.team, "(unknown)"), cmp.Or(f.Job, "(none)"))
	default:
		return a + " on " + cmp.Or(f.Job, f.ID)
	}
}
