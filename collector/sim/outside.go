package sim

import "github.com/gpupool/gpupool/schemas"

// OutsideGate is a Gate that also keeps the scheduler's picture of the GPU
// slots equal to the fleet's: the fleet tells it of every slot that something
// other than a gated job holds — a process started by hand, a zombie left by
// an ended job, a stray, a node that is down — and of each such slot freed
// again, so that a scheduler that places jobs (SetPlacer) never places one on
// a slot it cannot have.
type OutsideGate interface {
	Gate
	// Outside says that slot gpu of node (a node of whole GPUs) is held (true)
	// or free again (false) by what the gate does not admit; holder names it
	// ("zombie", "down", or a hand-started job's key).
	Outside(node string, gpu int, holder string, held bool)
	// OutsideMIG is Outside for a MIG instance: index in the layout of GPU
	// gpu of node (NodeCapacity.MIG).
	OutsideMIG(node string, gpu, index int, holder string, held bool)
}

// outsideKey is one slot.
type outsideKey struct {
	n   *Node
	gpu int
}

// heldOutside says what holds slot s when it is not a gated job ("" when free
// or held by one).
func (f *Fleet) heldOutside(s *slot) string {
	switch {
	case s.down:
		return "down"
	case s.job != nil && f.gated(s.job):
		return ""
	case s.job != nil:
		if s.job.source == schemas.SourceProcess {
			return "hand-started"
		}
		return "ungated job"
	case !s.free():
		return "leftover process"
	}
	return ""
}

// reportOutside tells an OutsideGate which slots changed hands since the last
// report. It runs at the end of every Advance: the scheduler places only
// between Advances, and what it admitted starts first in the next one.
func (f *Fleet) reportOutside() {
	og, ok := f.gate.(OutsideGate)
	if !ok {
		return
	}
	if f.outside == nil {
		f.outside = map[outsideKey]string{}
	}
	for _, c := range f.clusters {
		for _, n := range c.nodes {
			for i := range n.slots {
				k := outsideKey{n, i}
				now, was := f.heldOutside(&n.slots[i]), f.outside[k]
				switch {
				case now == was:
				case now == "":
					delete(f.outside, k)
					tellOutside(og, n, i, was, false)
				default:
					if was != "" {
						tellOutside(og, n, i, was, false)
					}
					f.outside[k] = now
					tellOutside(og, n, i, now, true)
				}
			}
		}
	}
}

// tellOutside tells og that slot i of n is held, or free again.
func tellOutside(og OutsideGate, n *Node, i int, holder string, held bool) {
	if s := &n.slots[i]; n.mig {
		og.OutsideMIG(n.name, int(s.gpuIndex), s.migIndex, holder, held)
		return
	}
	og.Outside(n.name, i, holder, held)
}

// SetReserved tells the fleet which slots the scheduler reserves for jobs that
// wait (node → slot indices or MIG instances): work the scheduler does not admit (a process
// started by hand) keeps off them, as the node agent keeps it off GPUs the
// scheduler holds, so that a reservation holds. Each call replaces the last.
func (f *Fleet) SetReserved(r []NodeGPUs) {
	for _, c := range f.clusters {
		clear(c.reserved)
	}
	for _, a := range r {
		for _, n := range f.nodes {
			if n.name != a.Node {
				continue
			}
			if n.c.reserved == nil {
				n.c.reserved = map[outsideKey]bool{}
			}
			for k := range a.count() {
				if i := n.slotOf(a, k); i >= 0 {
					n.c.reserved[outsideKey{n, i}] = true
				}
			}
		}
	}
}
