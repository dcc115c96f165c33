package scheduler

import "github.com/gpupool/gpupool/scheduler/placement"

// PlacementOf is where the job with this key (the scheduler's ID or attempt
// key, or an external job's key in its own system) is placed: its nodes and GPU
// indices, nil when it is not running on nodes. An executor that starts the
// job (a simulated fleet) runs it there.
func (s *Service) PlacementOf(key string) []placement.NodeAlloc {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := key
	if ext, ok := s.external[key]; ok {
		id = ext
	}
	j, ok := s.engine.Job(id)
	if !ok || !j.running() {
		return nil
	}
	out := make([]placement.NodeAlloc, len(j.Placement))
	for i, a := range j.Placement {
		out[i] = placement.NodeAlloc{Node: a.Node, GPUs: append([]int(nil), a.GPUs...), Slices: append([]placement.Slice(nil), a.Slices...)}
	}
	return out
}
