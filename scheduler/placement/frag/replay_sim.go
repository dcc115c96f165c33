package frag

import (
	"container/heap"
	"fmt"
	"math"
	"slices"
)

// sim is one policy's replay under one queue discipline. Between events the
// cluster does not change; at each event time the tasks that end are released,
// the arrivals join the queue, and the queue is tried (pass).
type sim struct {
	in      *ReplayInput
	c       *Cluster
	pol     Policy
	reserve bool
	start   []float64 // per job: start time, -1 while not started
	place   []Placement
	tried   []bool      // the job was tried and fitted nowhere (but maybe on dirty nodes)
	queue   []int       // waiting jobs, arrival order
	ends    endHeap     // running jobs by end time
	dirty   []int       // nodes that gained free resources since the last pass
	holder  []int       // per node: the job holding it (reserve), -1 none
	holds   map[int]int // job → the node it holds
	onNode  [][]int     // per node: the jobs running on it
	now     float64
	alloc   int // milli-GPU allocated now
	meter   *Meter
	check   func(*sim) // test hook: after every event time
}

func newSim(in *ReplayInput, c *Cluster, pol Policy, reserve bool, samples int) *sim {
	s := &sim{in: in, c: c, pol: pol, reserve: reserve, meter: NewMeter(in.Horizon, samples), holds: map[int]int{},
		start: make([]float64, len(in.Jobs)), place: make([]Placement, len(in.Jobs)), tried: make([]bool, len(in.Jobs)),
		holder: make([]int, len(c.Nodes)), onNode: make([][]int, len(c.Nodes))}
	for i := range s.start {
		s.start[i] = -1
	}
	for i := range s.holder {
		s.holder[i] = -1
	}
	return s
}

// run replays every event up to the horizon, then releases what still runs.
func (s *sim) run() error {
	jobs, next := s.in.Jobs, 0
	for {
		end := math.Inf(1)
		if len(s.ends) > 0 {
			end = s.ends[0].at
		}
		t, ok := s.in.NextEvent(next, end)
		if !ok {
			break
		}
		s.advance(t)
		for len(s.ends) > 0 && s.ends[0].at == t {
			s.finish(heap.Pop(&s.ends).(ending).job)
		}
		for ; next < len(jobs) && jobs[next].Arrive == t; next++ {
			s.queue = append(s.queue, next)
		}
		if err := s.pass(); err != nil {
			return err
		}
		if s.check != nil {
			s.check(s)
		}
	}
	s.advance(s.in.Horizon)
	return s.drain()
}

// advance integrates allocation and takes the stranded-capacity samples due
// before t, the cluster being as it is now.
func (s *sim) advance(t float64) {
	s.meter.Advance(t, s.alloc, s.stranded)
	s.now = t
}

// stranded is the free GPU capacity no waiting task's shape can use (Figure's
// StrandedMilli summed over models), holds set aside.
func (s *sim) stranded() int {
	var shapes []Shape
	for _, j := range s.queue {
		if s.in.Jobs[j].Shape.GPUs > 0 {
			shapes = append(shapes, s.in.Jobs[j].Shape)
		}
	}
	if len(shapes) == 0 {
		return 0
	}
	for _, n := range s.holds {
		s.c.Nodes[n].held = false
	}
	total := StrandedMilli(s.c, shapes)
	for _, n := range s.holds {
		s.c.Nodes[n].held = true
	}
	return total
}

func (s *sim) finish(j int) {
	sh := s.in.Jobs[j].Shape
	s.c.Release(sh, s.place[j])
	on := s.onNode[s.place[j].Node]
	i := slices.Index(on, j)
	on[i] = on[len(on)-1]
	s.onNode[s.place[j].Node] = on[:len(on)-1]
	s.alloc -= sh.DemandMilli()
	s.dirty = append(s.dirty, s.place[j].Node)
}

// drain releases every running job (after the horizon) and checks that the
// cluster is whole again: every start was matched by an end.
func (s *sim) drain() error {
	for len(s.ends) > 0 {
		s.finish(heap.Pop(&s.ends).(ending).job)
	}
	for i := range s.c.Nodes {
		n := &s.c.Nodes[i]
		n.held = false
		if n.CPUFree != n.Spec.CPUMilli || n.MemFree != n.Spec.MemoryMiB || s.alloc != 0 {
			return fmt.Errorf("frag: replay %s: node %s not whole after every job ended", s.pol.Name(), n.Spec.Name)
		}
		for _, g := range n.GPUFree {
			if g != MilliGPU {
				return fmt.Errorf("frag: replay %s: node %s not whole after every job ended", s.pol.Name(), n.Spec.Name)
			}
		}
	}
	return nil
}

// ending is a running job and when it ends.
type ending struct {
	at  float64
	job int
}

type endHeap []ending

func (h endHeap) Len() int { return len(h) }
func (h endHeap) Less(i, j int) bool {
	return h[i].at < h[j].at || (h[i].at == h[j].at && h[i].job < h[j].job)
}
func (h endHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *endHeap) Push(x any)   { *h = append(*h, x.(ending)) }
func (h *endHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
