package scheduler

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/gpupool/gpupool/scheduler/executor"
	"github.com/gpupool/gpupool/schemas"
)

// A job submitted to the scheduler may name, in its labels, the Kubernetes Job
// or Kueue Workload, or the Slurm job, that runs it (labelTarget): the
// scheduler then stops and resumes that job through its executor, which holds
// cluster-wide rights. Labels are a claim, not ownership: before the executor
// is handed such a job, its executor must confirm that it is the team's
// (executor.Resolver: the Kubernetes namespace mapped to the team, the Slurm
// account or user mapped to the team). A submit or resume naming another
// team's job is refused (ErrNotOwner, the API's 403); an order the scheduler
// gives on its own (a reclaim, a preemption, a resume after readmission) is
// refused and recorded as a skip of class ownership, and the job is not ordered
// stopped again.

// confirmOwner asks t's executor whose t is, and returns nil when it is team's.
// A job its system does not have is executor.ErrNotFound (nothing to act on),
// unless the place it names (a namespace) is already another team's;
// one that is another team's, nobody's, or whose owner no executor can say is
// ErrNotOwner; a failure to ask is returned as it is.
func (s *Service) confirmOwner(ctx context.Context, team string, t executor.Target) error {
	ex := cmp.Or(s.execs[t.Source], s.execs[""])
	r, ok := ex.(executor.Resolver)
	if ex == nil || !ok {
		return fmt.Errorf("%w: no executor can say whose %s %s is", ErrNotOwner, t.Source, describeTarget(t))
	}
	o, err := r.Owner(ctx, t)
	switch {
	case errors.Is(err, executor.ErrNotFound) && o.Team != "" && o.Team != team:
		return fmt.Errorf("%w: %s would be team %s's (%s), not team %s's", ErrNotOwner, describeTarget(t), o.Team, o.Detail, schemas.Clip(team))
	case errors.Is(err, executor.ErrNotFound):
		return err
	case errors.Is(err, executor.ErrUnmapped), errors.Is(err, executor.ErrUnsupported):
		return fmt.Errorf("%w: %s is no team's that gpupool knows: %v", ErrNotOwner, describeTarget(t), err)
	case err != nil:
		return fmt.Errorf("scheduler: confirm the owner of %s: %w", describeTarget(t), err)
	case o.Team != team:
		return fmt.Errorf("%w: %s is team %s's (%s), not team %s's", ErrNotOwner, describeTarget(t), o.Team, o.Detail, schemas.Clip(team))
	}
	return nil
}

// describeTarget names an external job for errors and audit rows.
func describeTarget(t executor.Target) string {
	switch {
	case t.K8sJob != "":
		return "Kubernetes Job " + t.Namespace + "/" + t.K8sJob
	case t.KueueWorkload != "":
		return "Kueue Workload " + t.Namespace + "/" + t.KueueWorkload
	case t.SlurmJobID != "":
		return "Slurm job " + t.SlurmJobID
	}
	return "job " + t.Job
}

// CheckLabels refuses a job of team whose labels name an external job that
// its executor says is not team's (ErrNotOwner). A job its system does not
// have yet passes: it is checked again before the executor is handed it.
// Submit and Resume call it; the API answers its refusal with 403.
func (s *Service) CheckLabels(ctx context.Context, team string, labels map[string]string) error {
	var t executor.Target
	if !s.labelTarget(&t, labels) {
		return nil
	}
	err := s.confirmOwner(ctx, team, t)
	if errors.Is(err, executor.ErrNotFound) {
		return nil
	}
	return err
}

// checkOrder confirms, before o goes to its executor, that an external job
// named by the labels of the scheduler's job o.id is that job's team's. Orders
// about other jobs (the scheduler's own, an external job whose executor
// resolved it before the scheduler queued it) pass. A job its system no longer
// has is executor.ErrNotFound: already gone, without the executor being called.
func (s *Service) checkOrder(ctx context.Context, o order) error {
	if o.id == "" || o.kill || (o.target.Source != schemas.SourceKubernetes && o.target.Source != schemas.SourceSlurm) {
		return nil
	}
	s.mu.Lock()
	j, ok := s.engine.Job(o.id)
	var team string
	external := ok && j.External != nil
	if ok {
		team = j.Spec.Team
	}
	s.mu.Unlock()
	if !ok || external {
		return nil
	}
	return s.confirmOwner(ctx, team, o.target)
}

// checkSubmit is CheckLabels for a submit: a refusal is recorded as a reject
// row, as any refused submit is.
func (s *Service) checkSubmit(ctx context.Context, spec JobSpec) error {
	if err := s.CheckLabels(ctx, spec.Team, spec.Labels); err != nil {
		return fmt.Errorf("job of team %s: %w", schemas.Clip(spec.Team), err)
	}
	return nil
}

// checkResume is CheckLabels for the job id its owner resumes.
func (s *Service) checkResume(ctx context.Context, id string) error {
	s.mu.Lock()
	j, ok := s.engine.Job(id)
	var team string
	var labels map[string]string
	if ok && j.External == nil {
		team, labels = j.Spec.Team, cloneMap(j.Spec.Labels)
	}
	s.mu.Unlock()
	if err := s.CheckLabels(ctx, team, labels); err != nil {
		err = fmt.Errorf("resume job %s: %w", schemas.Clip(id), err)
		if errors.Is(err, ErrNotOwner) {
			s.mu.Lock()
			var row Action
			if j, ok := s.engine.Job(id); ok {
				snap := j.Snapshot()
				row = jobRow(&snap, DecResume, err.Error(), cmp.Or(ActorFrom(ctx), "unknown"), s.now())
			}
			s.mu.Unlock()
			row.Outcome, row.Details = OutcomeSkipped, map[string]string{"class": "ownership"}
			s.emit(ctx, []Action{row}, nil)
		}
		return err
	}
	return nil
}
