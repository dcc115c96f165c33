package scheduler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gpupool/gpupool/scheduler/executor"
	"github.com/gpupool/gpupool/scheduler/placement"
	"github.com/gpupool/gpupool/schemas"
)

// order is a stop or kill to hand to an executor, with the audit row its result
// goes into.
type order struct {
	// id is the engine's job, confirmed or kept running by the result; "" for a
	// job the scheduler does not run.
	id      string
	row     Action
	target  executor.Target
	kill    bool
	requeue bool
	grace   time.Duration
	// lastRound: a policy step's last round of tries (a failure is final).
	lastRound bool
	// resume lets a requeued job run again (Executor.Resume).
	resume bool
	// hold keeps the requeued job from running again until its owner resumes it
	// (a hung job suspended by a policy), as dev work always is.
	hold bool
}

// describe turns an admission pass's decisions into audit rows, job events and
// executor orders. Call with s.mu held.
func (s *Service) describe(decs []Decision, now time.Time) (rows []Action, events []schemas.JobEvent, orders []order) {
	for _, d := range decs {
		j := d.Job
		switch d.Kind {
		case DecisionAdmit:
			rows = append(rows, s.row(j, DecAdmit, OutcomeOK, fmt.Sprintf("%d %s in %s after %s in queue",
				j.Spec.GPUs, j.Card, j.Cluster, now.Sub(j.QueuedAt).Round(time.Second)), now))
			if d.Borrowed > 0 {
				rows = append(rows, s.row(j, DecBorrow, OutcomeOK, fmt.Sprintf("%d of its %d %s are beyond queue %s's nominal quota, lent by cohort %s",
					d.Borrowed, j.Spec.GPUs, j.Card, j.Spec.Queue, s.cohort(j)), now))
			}
			if j.External == nil { // its own system reports the external job's runs
				events = append(events, s.admitEvents(j, now)...)
			}
		case DecisionReclaim, DecisionPreempt, DecisionExpire:
			dec := map[DecisionKind]string{DecisionReclaim: DecReclaim, DecisionPreempt: DecPreempt, DecisionExpire: DecExpire}[d.Kind]
			r := s.row(j, dec, "", d.Reason, now)
			r.Details = map[string]string{}
			if d.For != nil {
				r.Details["for"] = d.For.ID
			}
			if d.Grace > 0 {
				r.Details["grace"] = d.Grace.String()
			}
			orders = append(orders, order{id: j.ID, row: r, target: s.target(j), requeue: d.Requeue, grace: d.Grace})
		case DecisionRequeue:
			r := s.row(j, DecRequeue, OutcomeOK, d.Reason, now)
			r.Job, r.Attempt, r.Cluster = d.OldKey, j.Attempt-1, d.OldCluster
			r.Details = map[string]string{"next_attempt": j.AttemptKey(), "place": fmt.Sprint(j.Seq)}
			rows = append(rows, r)
			if j.External == nil {
				events = append(events, s.requeueEvents(j, d.OldKey, d.OldCluster, d.Reason, now)...)
			}
		case DecisionStop:
			s.forgetExternal(j)
			rows = append(rows, s.row(j, DecStop, OutcomeOK, d.Reason, now))
			if j.External == nil {
				ev := s.baseEvent(j, schemas.EventEnd, now)
				ev.Status = schemas.StatusCancelled
				events = append(events, ev)
			}
		case DecisionWait:
			rows = append(rows, s.row(j, DecSkip, OutcomeSkipped, "not admitted: "+d.Reason, now))
		case DecisionSkip:
			rows = append(rows, s.row(j, DecSkip, OutcomeSkipped, d.Reason, now))
		}
	}
	return rows, events, orders
}

// target names an engine job for its executor. A job whose labels name the
// Kubernetes Job or Kueue Workload, or the Slurm job, that runs it (the mapping
// labels of scheduler.kubernetes and scheduler.slurm) goes to that system's
// executor when one is configured; any other is the scheduler's own.
func (s *Service) target(j *Job) executor.Target {
	if j.External != nil {
		t := *j.External
		t.Labels = cloneMap(t.Labels)
		t.Placement = nodeGPUs(j.Placement)
		return t
	}
	t := executor.Target{Job: j.AttemptKey(), Source: schemas.SourceScheduler, Cluster: j.Cluster, Pool: j.Pool, Placement: nodeGPUs(j.Placement)}
	if len(j.Spec.Labels) > 0 {
		t.Labels = cloneMap(j.Spec.Labels)
	}
	s.labelTarget(&t, j.Spec.Labels)
	return t
}

// nodeGPUs is a job's placement as its executor takes it (a copy; nil for
// none).
func nodeGPUs(p []placement.NodeAlloc) []executor.NodeGPUs {
	if len(p) == 0 {
		return nil
	}
	out := make([]executor.NodeGPUs, len(p))
	for i, a := range p {
		out[i] = executor.NodeGPUs{Node: a.Node, GPUs: slices.Clone(a.GPUs)}
		for _, sl := range a.Slices {
			out[i].MIG = append(out[i].MIG, executor.MIGSlice{GPU: sl.GPU, Index: sl.Index, Profile: sl.Profile})
		}
		for _, sh := range a.Shares {
			out[i].Shares = append(out[i].Shares, executor.GPUShare{GPU: sh.GPU, Fraction: sh.Fraction, Mode: string(sh.Mode), MemMiB: sh.MemMiB})
		}
	}
	return out
}

// labelTarget points t at the Kubernetes Job or Kueue Workload, or the Slurm
// job, that labels name, when that system has an executor; it reports whether
// they named one. The scheduler acts on such a job only once its executor
// confirms it is the team's (ownership.go).
func (s *Service) labelTarget(t *executor.Target, l map[string]string) bool {
	k, sl := s.cfg.Kubernetes, s.cfg.Slurm
	switch {
	case s.execs[schemas.SourceKubernetes] != nil && (label(l, k.JobLabel) != "" || label(l, k.WorkloadLabel) != ""):
		t.Source, t.Namespace = schemas.SourceKubernetes, label(l, k.NamespaceLabel)
		t.K8sJob, t.KueueWorkload = label(l, k.JobLabel), label(l, k.WorkloadLabel)
		return true
	case s.execs[schemas.SourceSlurm] != nil && label(l, sl.JobIDLabel) != "":
		t.Source, t.SlurmJobID = schemas.SourceSlurm, label(l, sl.JobIDLabel)
		return true
	}
	return false
}

// label returns l[key], or "" when key is empty.
func label(l map[string]string, key string) string {
	if key == "" {
		return ""
	}
	return l[key]
}

// carryOut hands o to its executor (with retries) and records the result. An
// engine job is confirmed stopped only if the executor succeeded; otherwise it
// keeps running and is never shown as moved. A refusal (executor.ErrUnsupported)
// is recorded as skipped, and the job is not ordered stopped again; a failure
// (after Retry.Attempts tries) is recorded as failed, and the job is not chosen
// again before a backoff, nor after failedRounds failures. It returns the row
// recorded.
func (s *Service) carryOut(ctx context.Context, o order) Action {
	out, name, tries, err := s.execute(ctx, o)
	row := o.row
	row.Executor, row.Tries = name, tries
	s.mu.Lock()
	if o.resume {
		s.mu.Unlock()
		return s.resumeDone(ctx, o, row, out, err)
	}
	switch {
	case errors.Is(err, ErrNotOwner):
		if o.id != "" {
			_, _ = s.engine.StopFailed(o.id, true, time.Time{}) // never ordered stopped again
		}
		row.Outcome, row.Reason = OutcomeSkipped, join(row.Reason, "refused: "+err.Error())
		row.Details = withDetail(row.Details, "class", "ownership")
		s.log.Warn("action on an external job refused: not the job's team's", "job", o.target.Job, "err", err)
	case errors.Is(err, executor.ErrUnsupported):
		if o.id != "" {
			_, _ = s.engine.StopFailed(o.id, true, time.Time{}) // it may have finished meanwhile
		}
		row.Outcome, row.Reason = OutcomeSkipped, join(row.Reason, fmt.Sprintf("refused by executor %s: %v", name, err))
		row.Details = withDetail(row.Details, "class", "executor")
		s.log.Info("executor refused an action", "job", o.target.Job, "executor", name, "err", err)
	case err == nil || errors.Is(err, executor.ErrNotFound):
		if o.id != "" {
			_ = s.engine.Confirm(o.id) // it may have finished meanwhile: then there is nothing to confirm
			if err == nil {
				s.suspended(o)
			}
		} else if err == nil && out.Done {
			row = s.readmit(o, row, s.now())
		}
		row.Outcome = OutcomeOK
		if err != nil {
			row.Reason = join(row.Reason, "already gone from "+name)
		} else if out.Detail != "" {
			row.Reason = join(row.Reason, out.Detail)
		}
	case errors.Is(err, errNoExecutor):
		row.Outcome, row.Reason = OutcomeSkipped, join(row.Reason, fmt.Sprintf("no executor for %s jobs", o.target.Source))
		row.Details = withDetail(row.Details, "class", "executor")
	default:
		final := o.lastRound
		if o.id != "" {
			j, ok := s.engine.Job(o.id)
			if ok && j.State == StateReclaiming {
				retryAt := s.now().Add(s.roundWait(j.StopFailures() + 1))
				f, _ := s.engine.StopFailed(o.id, false, retryAt)
				final = final || f
			}
		}
		row.Outcome, row.Reason = OutcomeFailed, join(row.Reason, err.Error())
		if final {
			row.Details = withDetail(row.Details, "final", "true")
			row.Reason = join(row.Reason, fmt.Sprintf("given up after %d rounds of tries", failedRounds))
		}
		s.log.Warn("executor action failed", "job", o.target.Job, "executor", name, "tries", tries, "err", err)
	}
	s.mu.Unlock()
	s.emit(ctx, []Action{row}, nil)
	return row
}

// roundWait is the pause before round n+1 of tries of an action whose round n
// failed: the longest in-call backoff (at least one interval), doubling.
func (s *Service) roundWait(n int) time.Duration {
	d := max(s.cfg.Retry.MaxBackoff, s.cfg.Interval)
	for i := 1; i < n; i++ {
		d *= 2
	}
	return d
}

// withDetail sets m[k] = v, making m if needed.
func withDetail(m map[string]string, k, v string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[k] = v
	return m
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// execute calls the executor for o's source, retrying failures with backoff up to
// Retry.Attempts; unsupported actions and vanished targets are not retried.
func (s *Service) execute(ctx context.Context, o order) (executor.Outcome, string, int, error) {
	ex := s.execs[o.target.Source]
	if ex == nil {
		ex = s.execs[""]
	}
	if ex == nil {
		return executor.Outcome{}, "", 0, errNoExecutor
	}
	// The executor is never handed an external job its labels name before it
	// said the job is the team's.
	if err := s.checkOrder(ctx, o); err != nil {
		return executor.Outcome{}, ex.Name(), 0, err
	}
	for try := 1; ; try++ {
		var out executor.Outcome
		var err error
		switch {
		case o.resume:
			out, err = ex.Resume(ctx, o.target)
		case o.kill:
			out, err = ex.Kill(ctx, o.target, o.grace)
		default:
			out, err = ex.Stop(ctx, o.target, o.requeue, o.grace)
		}
		if err == nil || errors.Is(err, executor.ErrUnsupported) || errors.Is(err, executor.ErrNotFound) || try >= s.cfg.Retry.Attempts {
			return out, ex.Name(), try, err
		}
		wait := s.cfg.Retry.wait(try)
		s.log.Warn("executor action failed, retrying", "job", o.target.Job, "executor", ex.Name(), "try", try, "wait", wait, "err", err)
		if serr := s.sleep(ctx, wait); serr != nil {
			return out, ex.Name(), try, fmt.Errorf("%w (retry abandoned: %v)", err, serr)
		}
	}
}

// recordOnly is the executor of the scheduler's own jobs when no other is
// configured: the scheduler is their system of record, so a stop is the decision
// itself, and the job's owner learns it from the job events.
type recordOnly struct{}

var _ executor.Executor = recordOnly{}

func (recordOnly) Name() string { return "none" }

func (recordOnly) Stop(context.Context, executor.Target, bool, time.Duration) (executor.Outcome, error) {
	return executor.Outcome{Done: true, Detail: "recorded; the owner follows the job events"}, nil
}

func (recordOnly) Resume(context.Context, executor.Target) (executor.Outcome, error) {
	return executor.Outcome{Done: true, Detail: "recorded"}, nil
}

func (recordOnly) Kill(context.Context, executor.Target, time.Duration) (executor.Outcome, error) {
	return executor.Outcome{}, executor.ErrUnsupported
}

// cohort is the cohort of j's queue ("" for none).
func (s *Service) cohort(j *Job) string {
	q, _ := s.engine.Queue(j.Spec.Queue)
	return q.Cohort
}
