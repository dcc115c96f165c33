package scheduler

import (
	"context"
	"fmt"

	"github.com/gpupool/gpupool/scheduler/engine"
	"github.com/gpupool/gpupool/scheduler/executor"
	"github.com/gpupool/gpupool/schemas"
)

// SubmitSuspended queues a job that runs outside the scheduler and waits,
// suspended in its own system, for the scheduler to admit it — the way Kueue
// gates a Kubernetes Job created with spec.suspend, or a Slurm job submitted
// held; the simulated fleet's gate (collector/sim.Gate) works so in the demo.
// When the engine admits it, its executor resumes it (Executor.Resume, the
// target carrying the card and cluster it was admitted on) and its system places
// and runs it. Its system reports its end (FinishExternal) and resubmits it
// itself: a stop — a policy's reclaim, a quota reclaim, a preemption — ends this
// job here, and the next attempt comes as a submission of its own
// (Job.Resubmits). t.Job names it in every row of the audit trail.
func (s *Service) SubmitSuspended(ctx context.Context, spec JobSpec, t executor.Target) (Job, error) {
	if t.Job == "" {
		return Job{}, fmt.Errorf("%w: a suspended job needs its key in its own system", ErrInvalidJob)
	}
	s.mu.Lock()
	if _, ok := s.external[t.Job]; ok {
		s.mu.Unlock()
		return Job{}, fmt.Errorf("%w: job %s is queued already", ErrJobState, schemas.Clip(t.Job))
	}
	now := s.now()
	j, err := s.engine.Submit(spec, now)
	if err != nil {
		s.mu.Unlock()
		return Job{}, err
	}
	ext := t
	ext.Labels = cloneMap(t.Labels)
	j.External, j.Resubmits = &ext, true
	s.engine.SetSuspension(j, &engine.Suspension{Target: ext})
	s.external[t.Job] = j.ID
	s.engine.Touch(j)
	snap := j.Snapshot()
	s.mu.Unlock()
	s.trigger()
	return snap, nil
}

// FinishExternal ends the job SubmitSuspended queued as key: its own system
// reports that it ended (status succeeded, failed or cancelled; a job its system
// preempted is cancelled here). Its GPUs count as free from now.
func (s *Service) FinishExternal(ctx context.Context, key, status string) (Job, error) {
	s.mu.Lock()
	id, ok := s.external[key]
	s.mu.Unlock()
	if !ok {
		return Job{}, fmt.Errorf("%w %s", ErrUnknownJob, schemas.Clip(key))
	}
	if status == schemas.StatusPreempted {
		status = schemas.StatusCancelled
	}
	return s.Finish(ctx, id, status)
}

// forgetExternal drops finished jobs from the key index. Call with s.mu held.
func (s *Service) forgetExternal(j *Job) {
	if j.External != nil && j.Resubmits {
		delete(s.external, j.External.Job)
	}
}
