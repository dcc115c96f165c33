package scheduler

import (
	"cmp"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// Labels the scheduler puts on the submit event of a requeued attempt.
const (
	// LabelFirstSubmit is the job's first submission (RFC 3339, UTC): a requeued
	// attempt keeps its place in line from then.
	LabelFirstSubmit = "gpupool.io/first-submit"
	// LabelRequeueReason says why the previous attempt was stopped.
	LabelRequeueReason = "gpupool.io/requeue-reason"
)

// Job events of the scheduler's own jobs (source scheduler). Each attempt has its
// own key; a requeued attempt is a new key whose rerun_of names the one stopped, so
// chargeback sees each attempt's queue wait and the cost of what was rerun:
//
//	submit                       attempt 1 queued
//	admit, start                 GPUs given (start carries the card and cluster;
//	                             a job of MIG instances: mig_profile, mig_instances, gpus 0;
//	                             a fraction: gpu_fraction, sharing, gpus 0)
//	preempt (status preempted)   the attempt was stopped to be requeued
//	submit, requeue              attempt n+1 queued (rerun_of = attempt n)
//	end (status …)               the job finished, was cancelled or ran past its limit

// baseEvent is an event that repeats only what identifies the attempt.
func (s *Service) baseEvent(j *Job, kind string, at time.Time) schemas.JobEvent {
	return schemas.JobEvent{
		TimeMs: at.UnixMilli(), Job: j.AttemptKey(), Event: kind, Cluster: cmp.Or(j.Cluster, j.Spec.Cluster),
		Attempt: uint32(j.Attempt), Source: schemas.SourceScheduler,
	}
}

// submitEvent carries everything known at submit.
func (s *Service) submitEvent(j *Job, at time.Time, rerunOf string) schemas.JobEvent {
	ev := s.baseEvent(j, schemas.EventSubmit, at)
	ev.Team, ev.Project, ev.Queue, ev.Pool = j.Spec.Team, j.Spec.Project, j.Spec.Queue, j.Pool
	ev.ModelName, ev.Workload, ev.Card = j.Spec.ModelName, j.Spec.Workload, j.Spec.Card
	setAsked(&ev, &j.Spec)
	ev.RerunOf = rerunOf
	if len(j.Spec.Labels) > 0 || rerunOf != "" {
		ev.Labels = cloneMap(j.Spec.Labels)
	}
	if rerunOf != "" {
		ev.Labels[LabelFirstSubmit] = j.SubmitTime.UTC().Format(time.RFC3339Nano)
	}
	return ev
}

// admitEvents are the admit and start of an attempt.
func (s *Service) admitEvents(j *Job, at time.Time) []schemas.JobEvent {
	admit := s.baseEvent(j, schemas.EventAdmit, at)
	start := s.baseEvent(j, schemas.EventStart, at)
	start.Card = j.Card
	setAsked(&start, &j.Spec)
	for _, a := range j.Placement {
		start.Nodes = append(start.Nodes, a.Node)
	}
	return []schemas.JobEvent{admit, start}
}

// setAsked puts what spec asks for on ev: whole GPUs, MIG instances of a
// profile (gpus 0), or a fraction of one GPU and its sharing mode (gpus 0), so that nothing downstream that counts a job's GPUs
// (chargeback's queue-wait GPU-hours, the jobs view) counts an instance as one.
func setAsked(ev *schemas.JobEvent, spec *JobSpec) {
	if spec.GPUFraction > 0 {
		ev.GPUs, ev.GPUFraction, ev.Sharing = 0, uint32(spec.GPUFraction), spec.Sharing
		return
	}
	if spec.MIGProfile != "" {
		ev.GPUs, ev.MIGProfile, ev.MIGInstances = 0, spec.MIGProfile, uint32(spec.GPUs)
		return
	}
	ev.GPUs = uint32(spec.GPUs)
}

// requeueEvents end the stopped attempt oldKey and queue the next one (j is the
// job after Requeue).
func (s *Service) requeueEvents(j *Job, oldKey, cluster, reason string, at time.Time) []schemas.JobEvent {
	pre := schemas.JobEvent{
		TimeMs: at.UnixMilli(), Job: oldKey, Event: schemas.EventPreempt, Cluster: cluster,
		Attempt: uint32(j.Attempt - 1), Source: schemas.SourceScheduler, Status: schemas.StatusPreempted,
	}
	sub := s.submitEvent(j, at, oldKey)
	sub.Labels[LabelRequeueReason] = reason
	req := s.baseEvent(j, schemas.EventRequeue, at)
	return []schemas.JobEvent{pre, sub, req}
}

// row starts an audit row about job j.
func (s *Service) row(j *Job, decision, outcome, reason string, at time.Time) Action {
	return Action{
		Time: at, Decision: decision, Outcome: outcome, Reason: reason, Job: auditKey(j), Attempt: j.Attempt,
		Queue: j.Spec.Queue, Pool: j.Pool, Team: j.Spec.Team, Project: j.Spec.Project,
		Cluster: cmp.Or(j.Cluster, j.Spec.Cluster), Card: cmp.Or(j.Card, j.Spec.Card), GPUs: j.Spec.GPUs, Borrowed: j.Borrowed,
	}
}

// auditKey names the job in the audit trail: its key in its own system for a
// job that system submitted (SubmitSuspended), else its attempt's key.
func auditKey(j *Job) string {
	if j.Resubmits && j.External != nil {
		return j.External.Job
	}
	return j.AttemptKey()
}

func cloneMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
