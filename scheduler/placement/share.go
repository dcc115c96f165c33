package placement

import (
	"cmp"
	"fmt"
	"slices"
)

// GPU fractions (issue 44). A request with Fraction asks for a share of one
// GPU, in thousandths (1–999), under a sharing mode. A whole GPU (never a
// partitioned one) given to a fraction becomes shared: it holds jobs of that
// one mode only, their fractions sum to at most 1000 and their memory limits
// to at most the card's memory (unchecked for cards configured without
// memory); it is not free for whole-GPU jobs until its last share leaves.
// The finder puts a fraction on the fullest shared GPU of its mode that has
// room (best fit), else on a free whole GPU of the fullest node (bin-pack),
// so whole GPUs stay free. A fraction that does not fit waits without a
// reservation (Plan). Reservations count on a shared GPU freeing when its
// last share's time limit ends (never while a share has none), and a fraction
// stays off a reserved GPU, shared or free, unless it ends by the
// reservation's hold, as any job does.

// FractionUnit is a whole GPU in a fraction's units: fractions are thousandths.
const FractionUnit = 1000

// Sharing is how a shared GPU is shared.
type Sharing string

// Sharing modes.
const (
	// TimeSlice: the device plugin's time-sliced replicas (or Slurm's shards).
	TimeSlice Sharing = "timeslice"
	// MPS: NVIDIA's Multi-Process Service, with a pinned memory limit.
	MPS Sharing = "mps"
)

// Sharings are the sharing modes.
var Sharings = []Sharing{TimeSlice, MPS}

// Share is one share of a GPU: the GPU's index on the node, the fraction in
// thousandths, the sharing mode and the memory limit in MiB.
type Share struct {
	GPU      int     `json:"gpu"`
	Fraction int     `json:"fraction"`
	Mode     Sharing `json:"mode"`
	MemMiB   int     `json:"mem_mib"`
}

// SharedGPU is a shared GPU's use: its mode, the fractions and memory its
// shares hold, and how many jobs hold them.
type SharedGPU struct {
	Node   string  `json:"node"`
	GPU    int     `json:"gpu"`
	Mode   Sharing `json:"mode"`
	Used   int     `json:"used"`
	MemMiB int     `json:"mem_mib"`
	Jobs   int     `json:"jobs"`
}

type shareKey struct {
	node int32
	gpu  int8
}

type sharedGPU struct {
	mode            Sharing
	frac, mem, jobs int
}

// compileShare checks r's fraction fields into c.
func (c *creq) compileShare(r Request) error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalidRequest, field, fmt.Sprintf(format, args...))
	}
	if r.Fraction == 0 {
		switch {
		case r.Sharing != "":
			return bad("sharing", "%q without fraction: a sharing mode is for a fraction of a GPU", r.Sharing)
		case r.MemoryMiB != 0:
			return bad("memory_mib", "%d without fraction: a memory limit is for a fraction of a GPU", r.MemoryMiB)
		}
		return nil
	}
	switch {
	case r.Fraction < 1 || r.Fraction >= FractionUnit:
		return bad("fraction", "%d is outside 1–999 (thousandths of one GPU; ask whole GPUs for more)", r.Fraction)
	case r.GPUs != 1:
		return bad("gpus", "%d with fraction %d: a fraction is of one GPU; ask 1", r.GPUs, r.Fraction)
	case r.MIGProfile != "":
		return bad("fraction", "set with mig_profile %q: ask a MIG instance or a fraction, not both", r.MIGProfile)
	case r.GPUsPerNode > 1:
		return bad("gpus_per_node", "%d with fraction: a fraction is of one GPU", r.GPUsPerNode)
	case !slices.Contains(Sharings, r.Sharing):
		return bad("sharing", "%q is neither %q nor %q", r.Sharing, TimeSlice, MPS)
	case r.MemoryMiB < 0:
		return bad("memory_mib", "%d is negative", r.MemoryMiB)
	}
	c.frac, c.mode, c.mem = r.Fraction, r.Sharing, r.MemoryMiB
	return nil
}

// cardMiB is card k's memory in MiB (0: not configured, unchecked).
func (ix *index) cardMiB(k int32) int { return ix.cards[k].MemoryGiB * 1024 }

// shareMem is the memory r's share holds on card k, and whether it fits the
// card at all.
func (ix *index) shareMem(r *creq, k int32) (int, bool) {
	card := ix.cardMiB(k)
	if r.mem > 0 {
		return r.mem, card == 0 || r.mem <= card
	}
	return r.frac * card / FractionUnit, true
}

// findShare places r's fraction on card k: the fullest shared GPU of its mode
// with room, else a free whole GPU as a one-GPU job would get it.
func (f *finder) findShare(r *creq, k int32) (Placement, bool) {
	mem, ok := f.ix.shareMem(r, k)
	if !ok {
		return Placement{}, false
	}
	u, ok := f.sharedFit(r, k, mem)
	if !ok {
		w := *r
		w.frac, w.n, w.perNode, w.level = 0, 1, 0, -1
		p, ok := f.findCard(&w, k)
		if !ok {
			return Placement{}, false
		}
		g := p.units[0].g
		u = unit{node: p.units[0].node, sgpu: int8(popcount((g & -g) - 1))}
	}
	u.frac, u.mem = int16(r.frac), int32(mem)
	n := &f.ix.nodes[u.node]
	return Placement{Cluster: f.ix.clusters[n.cluster].name, Card: f.ix.cards[k].Name, Sharing: r.mode, units: []unit{u}, ix: f.ix}, true
}

// sharedFit is the fullest shared GPU of card k in the live state where r's
// share (mem MiB) fits, outside the mask; ties go to the lowest node and GPU.
func (f *finder) sharedFit(r *creq, k int32, mem int) (unit, bool) {
	if f.st == nil {
		return unit{}, false
	}
	card := f.ix.cardMiB(k)
	var best shareKey
	bestUsed := -1
	for key, sh := range f.st.shared {
		n := &f.ix.nodes[key.node]
		if n.card != k || !r.allows(int(n.cluster)) || sh.mode != r.mode ||
			sh.frac+r.frac > FractionUnit || card > 0 && sh.mem+mem > card ||
			f.m != nil && f.m.g[key.node]&(1<<key.gpu) != 0 {
			continue // a reserved GPU (opened by a fraction that ends before the hold) is masked too
		}
		if c := cmp.Or(cmp.Compare(sh.frac, bestUsed), cmp.Compare(best.node, key.node), cmp.Compare(best.gpu, key.gpu)); c > 0 {
			best, bestUsed = key, sh.frac
		}
	}
	return unit{node: best.node, sgpu: best.gpu}, bestUsed >= 0
}

// addShares reads a's shares (one at most: a fraction is one share) into u.
func (p *Placement) addShares(u *unit, i int, a NodeAlloc) error {
	ix := p.ix
	ni := &ix.nodes[u.node]
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: nodes[%d].shares: %s", ErrInvalidRequest, i, fmt.Sprintf(format, args...))
	}
	if len(a.Shares) == 0 {
		return nil
	}
	sh := a.Shares[0]
	card := ix.cardMiB(ni.card)
	switch {
	case len(a.Shares) > 1 || p.Sharing != "" || u.g != 0 || u.s != 0:
		return bad("a placement holds one share, and nothing else")
	case sh.GPU < 0 || sh.GPU >= ni.gpus || ni.whole&(1<<sh.GPU) == 0:
		return bad("%s has no whole GPU %d to share", a.Node, sh.GPU)
	case sh.Fraction < 1 || sh.Fraction >= FractionUnit:
		return bad("fraction %d is outside 1–999", sh.Fraction)
	case !slices.Contains(Sharings, sh.Mode):
		return bad("mode %q is neither %q nor %q", sh.Mode, TimeSlice, MPS)
	case sh.MemMiB < 0 || card > 0 && sh.MemMiB > card:
		return bad("mem_mib %d is outside 0–%d", sh.MemMiB, card)
	}
	p.Sharing = sh.Mode
	u.sgpu, u.frac, u.mem = int8(sh.GPU), int16(sh.Fraction), int32(sh.MemMiB)
	return nil
}

// shareProblem says why u's share of mode cannot be taken now ("": it can).
func (s *State) shareProblem(u unit, mode Sharing) string {
	sh := s.shared[shareKey{u.node, u.sgpu}]
	if sh == nil {
		if s.v.g[u.node]&(1<<u.sgpu) == 0 {
			return fmt.Sprintf("GPU %d is held whole", u.sgpu)
		}
		return ""
	}
	card := s.ix.cardMiB(s.ix.nodes[u.node].card)
	switch {
	case sh.mode != mode:
		return fmt.Sprintf("GPU %d is shared by %s, not %s", u.sgpu, sh.mode, mode)
	case sh.frac+int(u.frac) > FractionUnit:
		return fmt.Sprintf("GPU %d has %d/1000 free, not %d", u.sgpu, FractionUnit-sh.frac, u.frac)
	case card > 0 && sh.mem+int(u.mem) > card:
		return fmt.Sprintf("GPU %d has %d MiB free, not %d", u.sgpu, card-sh.mem, u.mem)
	}
	return ""
}

// moveShare takes (or gives back) u's share; the GPU leaves the free whole
// GPUs with its first share and comes back with its last.
func (s *State) moveShare(u unit, mode Sharing, free bool) {
	key := shareKey{u.node, u.sgpu}
	sh := s.shared[key]
	if free {
		sh.frac -= int(u.frac)
		sh.mem -= int(u.mem)
		if sh.jobs--; sh.jobs == 0 {
			delete(s.shared, key)
			s.move(unit{node: u.node, g: 1 << u.sgpu}, true)
		}
		return
	}
	if sh == nil {
		sh = &sharedGPU{mode: mode}
		s.shared[key] = sh
		s.move(unit{node: u.node, g: 1 << u.sgpu}, false)
	}
	sh.frac += int(u.frac)
	sh.mem += int(u.mem)
	sh.jobs++
}

// Shared lists the shared GPUs, by node and GPU.
func (s *State) Shared() []SharedGPU {
	out := make([]SharedGPU, 0, len(s.shared))
	for k, sh := range s.shared {
		out = append(out, SharedGPU{Node: s.ix.nodes[k.node].name, GPU: int(k.gpu), Mode: sh.mode, Used: sh.frac, MemMiB: sh.mem, Jobs: sh.jobs})
	}
	slices.SortFunc(out, func(a, b SharedGPU) int {
		return cmp.Or(cmp.Compare(s.ix.nodeIdx[a.Node], s.ix.nodeIdx[b.Node]), cmp.Compare(a.GPU, b.GPU))
	})
	return out
}

// checkShares recounts the shared GPUs from the allocations (check's part).
func (s *State) checkShares() error {
	want := map[shareKey]sharedGPU{}
	for _, id := range s.Jobs() {
		a := s.allocs[id]
		for _, u := range a.p.units {
			if u.frac == 0 {
				continue
			}
			k := shareKey{u.node, u.sgpu}
			w := want[k]
			if w.jobs > 0 && w.mode != a.p.Sharing {
				return fmt.Errorf("job %s: GPU %v shared by %s and %s", id, k, w.mode, a.p.Sharing)
			}
			w.mode, w.frac, w.mem, w.jobs = a.p.Sharing, w.frac+int(u.frac), w.mem+int(u.mem), w.jobs+1
			want[k] = w
		}
	}
	if len(want) != len(s.shared) {
		return fmt.Errorf("%d shared GPUs, recounted %d", len(s.shared), len(want))
	}
	for k, w := range want {
		card := s.ix.cardMiB(s.ix.nodes[k.node].card)
		switch sh := s.shared[k]; {
		case sh == nil || *sh != w:
			return fmt.Errorf("shared GPU %v is %+v, recounted %+v", k, sh, w)
		case w.frac > FractionUnit || card > 0 && w.mem > card:
			return fmt.Errorf("shared GPU %v over-shared: %+v", k, w)
		case s.v.g[k.node]&(1<<k.gpu) != 0:
			return fmt.Errorf("shared GPU %v is free whole", k)
		}
	}
	return nil
}
