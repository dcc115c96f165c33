package placement

import (
	"cmp"
	"slices"
)

// Find returns where r would be placed now, without placing it; ok is false
// when it does not fit now.
func (s *State) Find(r Request) (p Placement, ok bool, err error) {
	c, err := s.ix.compile(r)
	if err != nil {
		return Placement{}, false, err
	}
	f := finder{ix: s.ix, v: &s.v, st: s}
	p, ok = f.find(&c)
	return p, ok, nil
}

// Check reports whether r is well formed and fits the empty fleet.
func (s *State) Check(r Request) error {
	c, err := s.ix.compile(r)
	if err != nil {
		return err
	}
	if !s.ix.fitsEmpty(&c) {
		return ErrNeverFits
	}
	return nil
}

// mask is GPUs and slices held back from a search (reservations), with the
// free whole GPUs under it per cluster and per domain (by card) when it masks
// the live view, so counts stay O(1).
type mask struct {
	g, s  []uint64
	nodes []int32
	freeC []int
	freeD []int
}

func newMask(ix *index) *mask {
	return &mask{g: make([]uint64, len(ix.nodes)), s: make([]uint64, len(ix.nodes))}
}

// add masks u.
func (m *mask) add(u unit) {
	if m.g[u.node] == 0 && m.s[u.node] == 0 {
		m.nodes = append(m.nodes, u.node)
	}
	m.g[u.node] |= u.g
	m.s[u.node] |= u.s
}

// recount computes the free whole GPUs under the mask in the live state.
func (m *mask) recount(s *State) {
	nc := len(s.ix.cards)
	m.freeC = make([]int, len(s.cfree))
	m.freeD = make([]int, len(s.dfree))
	for _, nd := range m.nodes {
		n := &s.ix.nodes[nd]
		f := popcount(s.v.g[nd] & m.g[nd])
		m.freeC[int(n.cluster)*nc+int(n.card)] += f
		for _, d := range n.domain {
			m.freeD[int(d)*nc+int(n.card)] += f
		}
	}
}

// finder searches one view (the live state's, or a projection) under a mask.
type finder struct {
	ix *index
	v  *view
	m  *mask  // nil: nothing masked
	st *State // set when v is st's live view: counts and buckets are usable
	// idle, set when searching a projection for a reservation, is the live
	// view: among placements that fit, the one holding the fewest GPUs idle now
	// is preferred, since those are what the reservation keeps from other jobs.
	idle *view
	// buf is reused for candidates.
	buf []cand
}

type cand struct {
	node    int32
	a       uint64
	n, idle int
}

// idleBits are node nd's units of r's kind free in the live view (idle set).
func (f *finder) idleBits(r *creq, nd int32) uint64 {
	if r.profile >= 0 {
		return f.idle.s[nd]
	}
	return f.idle.g[nd]
}

// pick takes k of a on node nd: the lowest, or with idle set those busy now
// first.
func (f *finder) pick(r *creq, nd int32, a uint64, k int) uint64 {
	if f.idle == nil {
		return lowest(a, k)
	}
	busy := a &^ f.idleBits(r, nd)
	b := lowest(busy, min(k, popcount(busy)))
	return b | lowest(a&^b, k-popcount(b))
}

// avail is what node nd has free for r.
func (f *finder) avail(r *creq, nd int32) uint64 {
	if r.profile >= 0 {
		pb := f.ix.nodes[nd].profBits
		if pb == nil {
			return 0
		}
		a := f.v.s[nd] & pb[r.profile]
		if f.m != nil {
			a &^= f.m.s[nd]
		}
		return a
	}
	a := f.v.g[nd]
	if f.m != nil {
		a &^= f.m.g[nd]
	}
	return a
}

// counted reports whether counts are kept for r's units.
func (f *finder) counted(r *creq) bool { return f.st != nil && r.profile < 0 }

func (f *finder) freeIn(r *creq, nodes []int32) int {
	t := 0
	for _, nd := range nodes {
		t += popcount(f.avail(r, nd))
	}
	return t
}

func (f *finder) clusterFree(r *creq, c int, k int32) int {
	if !f.counted(r) {
		return f.freeIn(r, f.ix.clusters[c].byCard[k])
	}
	i := c*len(f.ix.cards) + int(k)
	t := f.st.cfree[i]
	if f.m != nil && f.m.freeC != nil {
		t -= f.m.freeC[i]
	}
	return t
}

func (f *finder) domainFree(r *creq, d int32, k int32) int {
	if !f.counted(r) {
		return f.freeIn(r, f.ix.domains[d].byCard[k])
	}
	i := int(d)*len(f.ix.cards) + int(k)
	t := f.st.dfree[i]
	if f.m != nil && f.m.freeD != nil {
		t -= f.m.freeD[i]
	}
	return t
}

// find places r on its first card type that fits.
func (f *finder) find(r *creq) (Placement, bool) {
	for _, k := range r.cards {
		if p, ok := f.findCard(r, k); ok {
			return p, true
		}
	}
	return Placement{}, false
}

type scored struct {
	i    int32
	free int
}

// order sorts candidates: bin-pack tries the fullest first (fewest free that
// still fit), spread the emptiest; ties in index order.
func order(xs []scored, spread bool) {
	slices.SortFunc(xs, func(a, b scored) int {
		if spread {
			return cmp.Or(cmp.Compare(b.free, a.free), cmp.Compare(a.i, b.i))
		}
		return cmp.Or(cmp.Compare(a.free, b.free), cmp.Compare(a.i, b.i))
	})
}

func (f *finder) findCard(r *creq, k int32) (Placement, bool) {
	if r.frac > 0 {
		return f.findShare(r, k)
	}
	var arr [4]scored
	cs := arr[:0]
	for c := range f.ix.clusters {
		if !r.allows(c) {
			continue
		}
		if fr := f.clusterFree(r, c, k); fr >= r.n {
			cs = append(cs, scored{int32(c), fr})
		}
	}
	if !r.firstFit {
		order(cs, r.spread)
	}
	for _, c := range cs {
		if units, ok := f.inCluster(r, int(c.i), k); ok {
			p := Placement{Cluster: f.ix.clusters[c.i].name, Card: f.ix.cards[k].Name, units: units, ix: f.ix}
			if r.profile >= 0 {
				p.MIGProfile = f.ix.profiles[r.profile]
			}
			return p, true
		}
	}
	return Placement{}, false
}

func (f *finder) inCluster(r *creq, c int, k int32) ([]unit, bool) {
	nodes := f.ix.clusters[c].byCard[k]
	// A gang that fits on one node is inside every domain: bin-pack it onto the
	// fullest node that fits.
	if r.perNode == r.n || r.perNode == 0 && !(r.spread && r.n > 1) {
		if u, ok := f.oneNode(r, c, k, nodes); ok {
			return []unit{u}, true
		}
		if r.perNode == r.n {
			return nil, false
		}
	}
	if r.level < 0 {
		return f.inNodes(r, nodes, true)
	}
	top := r.level
	if !r.required {
		top = len(f.ix.fleet.Levels) - 1
	}
	for l := r.level; l <= top; l++ {
		var ds []scored
		for _, d := range f.ix.levelDomains[l][c] {
			if fr := f.domainFree(r, d, k); fr >= r.n {
				ds = append(ds, scored{d, fr})
			}
		}
		if !r.firstFit {
			order(ds, r.spread)
		}
		for _, d := range ds {
			if units, ok := f.inNodes(r, f.ix.domains[d.i].byCard[k], false); ok {
				return units, true
			}
		}
	}
	if r.required {
		return nil, false
	}
	return f.inNodes(r, nodes, true)
}

// oneNode finds the single node for all of r: the fullest that fits (spread:
// the emptiest).
func (f *finder) oneNode(r *creq, c int, k int32, nodes []int32) (unit, bool) {
	best, bestN := int32(-1), 0
	bestIdle := 0
	better := func(nd int32, n int) bool {
		if n < r.n {
			return false
		}
		if best < 0 {
			return true
		}
		if r.firstFit {
			return false
		}
		if f.idle != nil {
			if i, bi := popcount(f.avail(r, nd)&f.idleBits(r, nd)), bestIdle; i != bi {
				return i < bi
			}
		}
		if r.spread {
			return n > bestN || n == bestN && nd < best
		}
		return n < bestN || n == bestN && nd < best
	}
	if w := f.st.shapesFor(k); w != nil && f.counted(r) && !r.firstFit && !r.spread && f.idle == nil {
		// The expected workload is known: the node of least fragmentation
		// growth (shapes.go).
		if nd, ok := f.oneNodeByShapes(r, c, k, w); ok {
			return f.unit(r, nd, f.pick(r, nd, f.avail(r, nd), r.n)), true
		}
		return unit{}, false
	}
	if f.counted(r) && !r.firstFit {
		// Buckets: the first non-empty bucket from r.n up (spread: down) holds
		// the node; masked nodes are looked at one by one.
		if f.m != nil {
			for _, nd := range f.m.nodes {
				ni := &f.ix.nodes[nd]
				if int(ni.cluster) == c && ni.card == k {
					if n := popcount(f.avail(r, nd)); better(nd, n) {
						best, bestN = nd, n
					}
				}
			}
		}
		b := f.st.bucket[c*len(f.ix.cards)+int(k)]
		for i := range len(b) - r.n {
			fr := r.n + i
			if r.spread {
				fr = len(b) - 1 - i
			}
			if best >= 0 && (r.spread && fr <= bestN || !r.spread && fr >= bestN) {
				break
			}
			found := false
			for _, nd := range b[fr] {
				if f.m != nil && f.m.g[nd] != 0 {
					continue
				}
				best, bestN, found = nd, fr, true
				break
			}
			if found {
				break
			}
		}
	} else {
		for _, nd := range nodes {
			if n := popcount(f.avail(r, nd)); better(nd, n) {
				best, bestN = nd, n
				if f.idle != nil {
					bestIdle = popcount(f.avail(r, nd) & f.idleBits(r, nd))
				}
			}
		}
	}
	if best < 0 {
		return unit{}, false
	}
	return f.unit(r, best, f.pick(r, best, f.avail(r, best), r.n)), true
}

func (f *finder) unit(r *creq, nd int32, b uint64) unit {
	if r.profile >= 0 {
		return unit{node: nd, s: b}
	}
	return unit{node: nd, g: b}
}

// inNodes places r over several of nodes. known says the caller has checked
// that nodes hold at least r.n free.
func (f *finder) inNodes(r *creq, nodes []int32, clusterWide bool) ([]unit, bool) {
	if r.perNode > 0 && clusterWide && f.counted(r) && f.m == nil {
		// Enough nodes with perNode free?
		c := f.ix.nodes[nodes[0]].cluster
		b := f.st.bucket[int(c)*len(f.ix.cards)+int(f.ix.nodes[nodes[0]].card)]
		have := 0
		for fr := r.perNode; fr < len(b); fr++ {
			have += len(b[fr])
		}
		if have < r.n/r.perNode {
			return nil, false
		}
	}
	cs := f.buf[:0]
	total := 0
	for _, nd := range nodes {
		a := f.avail(r, nd)
		n := popcount(a)
		if n == 0 || r.perNode > 0 && n < r.perNode {
			continue
		}
		c := cand{node: nd, a: a, n: n}
		if f.idle != nil {
			c.idle = popcount(a & f.idleBits(r, nd))
		}
		cs = append(cs, c)
		total += n
	}
	f.buf = cs
	if total < r.n || r.perNode > 0 && len(cs) < r.n/r.perNode {
		return nil, false
	}
	var units []unit
	switch {
	case r.firstFit:
		left := r.n
		for _, c := range cs {
			if left == 0 {
				break
			}
			k := min(c.n, left)
			if r.perNode > 0 {
				k = r.perNode
			}
			units = append(units, f.unit(r, c.node, f.pick(r, c.node, c.a, k)))
			left -= k
		}
	case r.perNode > 0:
		slices.SortFunc(cs, func(a, b cand) int {
			if r.spread {
				return cmp.Or(cmp.Compare(a.idle, b.idle), cmp.Compare(b.n, a.n), cmp.Compare(a.node, b.node))
			}
			return cmp.Or(cmp.Compare(a.idle, b.idle), cmp.Compare(a.n, b.n), cmp.Compare(a.node, b.node))
		})
		for _, c := range cs[:r.n/r.perNode] {
			units = append(units, f.unit(r, c.node, f.pick(r, c.node, c.a, r.perNode)))
		}
	case r.spread:
		// Round-robin, one per node per round, emptiest nodes first.
		slices.SortFunc(cs, func(a, b cand) int { return cmp.Or(cmp.Compare(b.n, a.n), cmp.Compare(a.node, b.node)) })
		take := make([]int, len(cs))
		for left, round := r.n, 0; left > 0; round++ {
			for i := range cs {
				if left > 0 && cs[i].n > round {
					take[i]++
					left--
				}
			}
		}
		for i, c := range cs {
			if take[i] > 0 {
				units = append(units, f.unit(r, c.node, f.pick(r, c.node, c.a, take[i])))
			}
		}
	default:
		// Bin-pack over few nodes: whole nodes while the rest does not fit one,
		// then the fullest node that takes the rest.
		slices.SortFunc(cs, func(a, b cand) int {
			return cmp.Or(cmp.Compare(b.n, a.n), cmp.Compare(a.idle, b.idle), cmp.Compare(a.node, b.node))
		})
		left := r.n
		for i := 0; left > 0; i++ {
			if cs[i].n >= left {
				j := i
				for j+1 < len(cs) && cs[j+1].n >= left {
					j++
				}
				units = append(units, f.unit(r, cs[j].node, f.pick(r, cs[j].node, cs[j].a, left)))
				break
			}
			units = append(units, f.unit(r, cs[i].node, cs[i].a))
			left -= cs[i].n
		}
	}
	slices.SortFunc(units, func(a, b unit) int { return cmp.Compare(a.node, b.node) })
	return units, true
}
