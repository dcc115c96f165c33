package scheduler

import (
	"slices"

	"github.com/gpupool/gpupool/scheduler/placement"
)

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
	if !ok || !j.Running() {
		return nil
	}
	out := make([]placement.NodeAlloc, len(j.Placement))
	for i, a := range j.Placement {
		out[i] = placement.NodeAlloc{Node: a.Node, GPUs: append([]int(nil), a.GPUs...), Slices: append([]placement.Slice(nil), a.Slices...)}
	}
	return out
}

// HoldOutside marks GPU gpu of node as held (or freed) by something the
// scheduler did not admit — a process started by hand, a zombie, a node that is
// down — so that it places no job there (Engine.HoldOutside). The executor that
// sees the node reports it.
func (s *Service) HoldOutside(node string, gpu int, held bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.engine.HoldOutside(node, gpu, held)
}

// HoldOutsideMIG is HoldOutside for one MIG instance (index in GPU gpu's
// layout); HoldOutside on a partitioned GPU holds all its instances.
func (s *Service) HoldOutsideMIG(node string, gpu, index int, held bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.engine.HoldOutsideMIG(node, gpu, index, held)
}

// Reserved is the GPUs the last pass reserved for jobs that wait, by node: work
// the scheduler does not admit is kept off them.
func (s *Service) Reserved() []placement.NodeAlloc {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.engine.Reserved())
}

// Placed reports whether the scheduler places jobs on nodes (its model lists
// them).
func (s *Service) Placed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.engine.Placed()
}

// Fragmentation is, per cluster and card type, the free whole GPUs and the
// part of them no queued job's shape can use now (Engine.Fragmentation; nil
// when the scheduler does not place).
func (s *Service) Fragmentation() []placement.Fragmentation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.engine.Fragmentation()
}
