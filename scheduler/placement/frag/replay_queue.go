package frag

import (
	"container/heap"
	"fmt"
)

// pass tries the waiting jobs until nothing more can start: in arrival order
// (reserve: multi-GPU jobs first), each that fits starts where the policy puts
// it, one that fits nowhere is skipped. A job tried before is tried again only
// when its shape fits one of the nodes that gained resources since (every
// other node has only lost some), so a pass costs little when nothing changed.
func (s *sim) pass() error {
	dirty := s.dirty
	s.dirty = nil
	for len(dirty) > 0 || s.hasFresh() {
		lifted, err := s.passOnce(dirty)
		if err != nil {
			return err
		}
		if s.reserve {
			lifted = append(lifted, s.reserveNodes()...)
		}
		dirty = lifted
	}
	return nil
}

// hasFresh reports whether a waiting job has never been tried.
func (s *sim) hasFresh() bool {
	return len(s.queue) > 0 && !s.tried[s.queue[len(s.queue)-1]] && s.start[s.queue[len(s.queue)-1]] < 0
}

// passOnce tries every waiting job once; it returns the nodes whose holds were
// lifted (their gang started), which later jobs may now use.
func (s *sim) passOnce(dirty []int) ([]int, error) {
	var lifted []int
	failed := map[Shape]bool{}
	for _, j := range s.order() {
		ok, err := s.try(j, dirty, failed)
		if err != nil {
			return nil, err
		}
		if n, held := s.holds[j]; ok && held {
			s.unhold(j)
			lifted, dirty = append(lifted, n), append(dirty, n)
			clear(failed)
		}
	}
	kept := s.queue[:0]
	for _, j := range s.queue {
		if s.start[j] < 0 {
			kept = append(kept, j)
		}
	}
	s.queue = kept
	return lifted, nil
}

// order is the queue as tried: arrival order, multi-GPU jobs first under
// reserve.
func (s *sim) order() []int {
	if !s.reserve {
		return append([]int(nil), s.queue...)
	}
	out := make([]int, 0, len(s.queue))
	for _, gang := range []bool{true, false} {
		for _, j := range s.queue {
			if (s.in.Jobs[j].Shape.GPUs > 1) == gang {
				out = append(out, j)
			}
		}
	}
	return out
}

// try starts job j if the policy finds it a place; failed memoises the shapes
// (of jobs holding no node) that fitted nowhere in this pass.
func (s *sim) try(j int, dirty []int, failed map[Shape]bool) (bool, error) {
	job := s.in.Jobs[j]
	own, holds := s.holds[j]
	if !holds && failed[job.Shape] {
		s.tried[j] = true
		return false, nil
	}
	if holds {
		s.c.Nodes[own].held = false
		defer func() { s.c.Nodes[own].held = s.start[j] < 0 }()
	}
	if s.tried[j] && !s.fitsOn(job.Shape, dirty) {
		return false, nil
	}
	p, ok := s.pol.Choose(s.c, job.Shape)
	if !ok {
		s.tried[j] = true
		if !holds {
			failed[job.Shape] = true
		}
		return false, nil
	}
	if err := s.c.Place(job.Shape, p); err != nil {
		return false, fmt.Errorf("frag: replay: policy %s chose a placement that does not fit: %w", s.pol.Name(), err)
	}
	s.start[j], s.place[j] = s.now, p
	s.onNode[p.Node] = append(s.onNode[p.Node], j)
	s.alloc += job.Shape.DemandMilli()
	heap.Push(&s.ends, ending{at: s.now + job.Run, job: j})
	return true, nil
}

func (s *sim) fitsOn(sh Shape, nodes []int) bool {
	for _, n := range nodes {
		if s.c.Nodes[n].Fits(sh) {
			return true
		}
	}
	return false
}

// reserveNodes gives each waiting multi-GPU job, oldest first, a node no
// older job holds and whose size could host it: the one whose running jobs
// all end soonest (the trace's run times serve as exact time limits, as a
// backfilling scheduler's), ties to the most whole free GPUs. A job keeps its
// node unless another would drain strictly sooner. It returns the nodes given
// up.
func (s *sim) reserveNodes() []int {
	var lifted []int
	for _, j := range s.queue {
		sh := s.in.Jobs[j].Shape
		if sh.GPUs < 2 {
			continue
		}
		cur, has := s.holds[j]
		best := -1
		if has {
			best = cur
		}
		for i := range s.c.Nodes {
			if s.holder[i] < 0 && canHost(s.c.Nodes[i].Spec, sh) && (best < 0 || s.drainsBefore(i, best)) {
				best = i
			}
		}
		if best < 0 || (has && best == cur) {
			continue
		}
		if has {
			s.unhold(j)
			lifted = append(lifted, cur)
		}
		s.holds[j], s.holder[best], s.c.Nodes[best].held = best, j, true
	}
	return lifted
}

// drainsBefore reports whether node a's running jobs all end before node b's,
// or at the same time with more whole free GPUs on a.
func (s *sim) drainsBefore(a, b int) bool {
	da, db := s.drainAt(a), s.drainAt(b)
	return da < db || (da == db && wholeFree(&s.c.Nodes[a]) > wholeFree(&s.c.Nodes[b]))
}

// drainAt is when the last job running on node n ends (now if none).
func (s *sim) drainAt(n int) float64 {
	t := s.now
	for _, j := range s.onNode[n] {
		t = max(t, s.start[j]+s.in.Jobs[j].Run)
	}
	return t
}

func (s *sim) unhold(j int) {
	n := s.holds[j]
	delete(s.holds, j)
	s.holder[n], s.c.Nodes[n].held = -1, false
}

// canHost reports whether an empty node of this spec could run the shape.
func canHost(n NodeSpec, s Shape) bool {
	return n.CPUMilli >= s.CPUMilli && n.MemoryMiB >= s.MemoryMiB && n.GPUs >= s.GPUs && s.Allows(n.Model)
}

func wholeFree(n *Node) int {
	w := 0
	for _, g := range n.GPUFree {
		if g == MilliGPU {
			w++
		}
	}
	return w
}
