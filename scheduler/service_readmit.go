package scheduler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gpupool/gpupool/scheduler/engine"
	"github.com/gpupool/gpupool/scheduler/executor"
	"github.com/gpupool/gpupool/schemas"
)

// ActorScheduler is the actor of what the scheduler does on its own to a job
// that runs outside it: queue it again after a policy reclaimed it, reactivate it
// when its queue has room, find it gone.
const ActorScheduler = "scheduler"

// A policy that reclaims a job the scheduler does not run (a k8s/… pod of a
// Kubernetes Job or Kueue Workload, a Slurm job) has its executor suspend it
// (spec.suspend, spec.active=false, scontrol requeuehold; a plain Slurm requeue
// and an evicted pod come back on their own). Left at that, nobody
// would ever let it run again. readmit queues it instead, as a job of the queue
// its team has in its pool, standing for the external one (Job.External): the
// engine admits it when that queue has room, like any other, and the executor
// then undoes the suspension (Executor.Resume: spec.suspend=false,
// spec.active=true, scontrol release), recorded as a resume row with actor
// ActorScheduler. Dev work is held until its owner resumes it, as the
// scheduler's own dev jobs are. While it runs, its executor is asked each pass
// whether it is still there (executor.Checker); gone, it is finished and its
// GPUs are free again.

// readmit queues the external job o's policy reclaim just suspended, and says
// so in the reclaim's row. Call with s.mu held.
func (s *Service) readmit(o order, row Action, now time.Time) Action {
	t := o.target
	if o.kill || !o.requeue || o.resume || t.Source == schemas.SourceScheduler || t.Job == "" {
		return row
	}
	if _, ok := cmp.Or(s.execs[t.Source], s.execs[""]).(executor.Checker); !ok {
		// Its GPUs would count as held for ever: nothing could say when it ends
		// (the sim executor: the simulated fleet resubmits its jobs itself).
		return row
	}
	switch {
	case t.Source == schemas.SourceSlurm && !s.cfg.Slurm.RequeueHold:
		row.Reason = join(row.Reason, "Slurm requeued it without a hold and runs it again itself")
		return row
	case t.Source == schemas.SourceKubernetes && s.cfg.Kubernetes.Mode == executor.KubernetesModeEvict:
		row.Reason = join(row.Reason, "its controller recreates the evicted pod")
		return row
	}
	spec, err := s.externalSpec(row, t)
	if err != nil {
		row.Reason = join(row.Reason, "not queued again: "+err.Error()+"; resume it by hand")
		row.Details = withDetail(row.Details, "readmit", "none")
		return row
	}
	j, err := s.engine.Submit(spec, now)
	if err != nil {
		row.Reason = join(row.Reason, fmt.Sprintf("not queued again in %s: %v; resume it by hand", spec.Queue, err))
		row.Details = withDetail(row.Details, "readmit", "none")
		return row
	}
	ext := t
	ext.Labels = cloneMap(t.Labels)
	j.External = &ext
	s.engine.SetSuspension(j, &engine.Suspension{Target: ext})
	j.Held = o.hold || j.Interactive()
	s.engine.Touch(j)
	what := "reactivated when it has room"
	if j.Held {
		what = "held until its owner resumes it (gpupool jobs resume " + j.ID + ")"
	}
	row.Reason = join(row.Reason, fmt.Sprintf("queued again as %s in queue %s: %s", j.ID, spec.Queue, what))
	row.Details = withDetail(row.Details, "readmit", j.ID)
	return row
}

// externalSpec is the request an external job makes of the queue its team (or
// project) has in its pool: its GPUs, its card, its cluster.
func (s *Service) externalSpec(row Action, t executor.Target) (JobSpec, error) {
	if row.GPUs < 1 {
		return JobSpec{}, errors.New("the finding names none of its GPUs")
	}
	q, ok := s.engine.QueueFor(row.Pool, row.Team, row.Project)
	if !ok {
		return JobSpec{}, fmt.Errorf("no queue of team %s in pool %s", cmp.Or(row.Team, "(none)"), cmp.Or(row.Pool, "(none)"))
	}
	spec := JobSpec{
		Name: t.Job, Team: row.Team, Project: row.Project, Queue: q.Name, GPUs: row.GPUs,
		Labels: cloneMap(t.Labels),
	}
	if q.Team != "" {
		spec.Team = q.Team
	}
	if q.Project != "" {
		spec.Project = q.Project
	}
	if s.engine.HasCard(row.Card) {
		spec.Card = row.Card
	}
	if s.engine.HasCluster(row.Cluster) {
		spec.Cluster = row.Cluster // it resumes where it was suspended
	}
	if q.Pool == PoolDev {
		spec.Workload = schemas.WorkloadDev
	}
	return spec, nil
}

// externalIndex finds the queued or running job that stands for the external
// job a finding names (its job key; for Kubernetes, a later pod of the same
// Job): built once from the live jobs for every finding of a pass, since a scan
// of the live jobs per finding costs findings × jobs (at 10,000 GPUs, thousands
// of each). Where several jobs match, the first submitted wins.
type externalIndex struct {
	byKey map[string]*Job
	// byK8sJob is keyed by the Kubernetes Job's namespace and name.
	byK8sJob map[[2]string]*Job
}

func newExternalIndex(e *Engine) *externalIndex {
	ix := &externalIndex{byKey: map[string]*Job{}, byK8sJob: map[[2]string]*Job{}}
	for _, j := range e.LiveJobs() { // in submission order: the first kept
		x := j.External
		if x == nil {
			continue
		}
		if _, ok := ix.byKey[x.Job]; !ok {
			ix.byKey[x.Job] = j
		}
		if k, ok := k8sJobOf(x); ok {
			if _, dup := ix.byK8sJob[k]; !dup {
				ix.byK8sJob[k] = j
			}
		}
	}
	return ix
}

// find is the job standing for the external job key (with its labels), or nil.
func (ix *externalIndex) find(key string, labels map[string]string) *Job {
	byKey := ix.byKey[key]
	var byJob *Job
	if got := cmp.Or(labels["batch.kubernetes.io/job-name"], labels["job-name"]); got != "" && strings.HasPrefix(key, "k8s/") {
		ns, _, _ := strings.Cut(strings.TrimPrefix(key, "k8s/"), "/")
		byJob = ix.byK8sJob[[2]string{ns, got}]
	}
	if byKey == nil || byJob != nil && byJob.Seq < byKey.Seq {
		return byJob
	}
	return byKey
}

// k8sJobOf is the namespace and name of the Kubernetes Job whose pods x's job
// runs as, if x is one.
func k8sJobOf(x *executor.Target) ([2]string, bool) {
	name := cmp.Or(x.K8sJob, x.Labels["batch.kubernetes.io/job-name"], x.Labels["job-name"])
	if x.Source != schemas.SourceKubernetes || name == "" {
		return [2]string{}, false
	}
	xns, _, _ := strings.Cut(strings.TrimPrefix(x.Job, "k8s/"), "/")
	return [2]string{cmp.Or(x.Namespace, xns), name}, true
}

// recheck asks the executors whether the running jobs that which selects are
// still there; one that is gone is finished, with the executor's account as the
// reason, and its GPUs go back. Jobs whose executor cannot tell
// (executor.Checker) are kept, as are those it failed to answer for.
func (s *Service) recheck(ctx context.Context, which func(*Job) bool, why string) (gone int) {
	type probe struct {
		id string
		t  executor.Target
		c  executor.Checker
	}
	var probes []probe
	s.mu.Lock()
	for _, j := range s.engine.LiveJobs() {
		if !j.Running() || !which(j) {
			continue
		}
		t := s.target(j)
		if t.Source == schemas.SourceScheduler {
			continue
		}
		ex := cmp.Or(s.execs[t.Source], s.execs[""])
		if c, ok := ex.(executor.Checker); ok {
			probes = append(probes, probe{j.ID, t, c})
		}
	}
	s.mu.Unlock()
	for _, p := range probes {
		if ctx.Err() != nil {
			return gone
		}
		// An external job named by labels is asked after only once its
		// executor said it is the job's team's.
		if err := s.checkOrder(ctx, order{id: p.id, target: p.t}); errors.Is(err, executor.ErrNotFound) {
			if s.goneJob(ctx, p.id, why+": "+err.Error()) {
				gone++
			}
			continue
		} else if err != nil {
			s.log.Warn("check a running job against its executor: its owner not confirmed; kept", "job", p.t.Job, "err", err)
			continue
		}
		pr, err := p.c.Check(ctx, p.t)
		if err != nil {
			s.log.Warn("check a running job against its executor; kept", "job", p.t.Job, "err", err)
			continue
		}
		if !pr.Gone {
			continue
		}
		if s.goneJob(ctx, p.id, why+": "+pr.Detail) {
			gone++
		}
	}
	return gone
}

// goneJob finishes a running job its executor no longer has, and records it.
func (s *Service) goneJob(ctx context.Context, id, reason string) bool {
	s.mu.Lock()
	now := s.now()
	j, ok := s.engine.Live(id)
	if !ok || !j.Running() {
		s.mu.Unlock()
		return false
	}
	key := j.AttemptKey()
	j, err := s.engine.Finish(id, schemas.StatusCancelled, now)
	if err != nil {
		s.mu.Unlock()
		return false
	}
	snap := j.Snapshot()
	var events []schemas.JobEvent
	if j.External == nil {
		ev := s.baseEvent(j, schemas.EventEnd, now)
		ev.Status = schemas.StatusCancelled
		events = append(events, ev)
	}
	s.stage(events)
	s.mu.Unlock()
	row := jobRow(&snap, DecFinish, "gone from its executor; finished, its GPUs are free again ("+reason+")", ActorScheduler, now)
	row.Job = key
	s.emit(ctx, []Action{row}, nil)
	s.sendStaged(ctx)
	s.log.Info("running job gone from its executor", "job", key, "reason", reason)
	return true
}
