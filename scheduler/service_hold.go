package scheduler

import (
	"cmp"
	"context"
)

// Resume lets a job held after a policy reclaimed it (idle dev work: Job.Held)
// be admitted again: its owner is back. It is recorded as a resume row with the
// caller as its actor.
func (s *Service) Resume(ctx context.Context, id string) (Job, error) {
	if err := s.checkResume(ctx, id); err != nil {
		return Job{}, err
	}
	s.mu.Lock()
	now := s.now()
	j, err := s.engine.Resume(id)
	if err != nil {
		s.mu.Unlock()
		return Job{}, err
	}
	snap := j.Snapshot()
	s.mu.Unlock()
	row := jobRow(&snap, DecResume, "resumed by its owner after a reclaim", cmp.Or(ActorFrom(ctx), "unknown"), now)
	s.emit(ctx, []Action{row}, nil)
	s.saveState()
	s.trigger()
	return snap, nil
}
