package placement

// The expected workload, learned from the recent mix of job shapes, and the
// fragmentation-aware choice of a node it allows (issue 44): among the nodes
// a gang fits on whole, the one whose use leaves the fewest free GPUs that the
// expected shapes cannot use — the FGD paper's least growth of node
// fragmentation, over the demand weighted by the GPUs each shape asks (an
// 8-GPU job is eight 1-GPU jobs' worth of demand that a broken node turns
// away), ties to the fullest node (bin-packing, so whole nodes stay free).

// shapeDecay is how much of the past each new shape keeps: the workload is
// about the last few hundred jobs of a card type.
const shapeDecay = 1 - 1.0/256

// shapeBook is, per card type, the recent demand by the GPUs a shape needs
// free on one node: w[need], GPU-weighted and decayed; nil until a shape of
// the card is observed.
type shapeBook [][]float64

// ObserveShape adds a job of gpus whole GPUs of card, needing perNode of them
// free on each node it uses, to the expected workload; perNode 0 (a gang
// that may spread over any free GPUs) counts as needing 1. Unknown cards,
// and jobs of no GPUs, are ignored.
func (s *State) ObserveShape(card string, perNode, gpus int) {
	k, ok := s.ix.cardIdx[card]
	if !ok || gpus <= 0 {
		return
	}
	need := min(max(perNode, 1), s.ix.maxGPUs)
	if s.shapes == nil {
		s.shapes = make(shapeBook, len(s.ix.cards))
	}
	w := s.shapes[k]
	if w == nil {
		w = make([]float64, s.ix.maxGPUs+1)
		s.shapes[k] = w
	}
	for i := range w {
		w[i] *= shapeDecay
	}
	w[need] += float64(gpus)
}

// shapesFor returns card k's expected workload, or nil (none observed, or
// the finder searches a projection, which has no state).
func (s *State) shapesFor(k int32) []float64 {
	if s == nil || int(k) >= len(s.shapes) {
		return nil
	}
	return s.shapes[k]
}

// fragGrowth is how much node fragmentation grows when n of a node's free
// GPUs are taken: F(free−n) − F(free), where F(x) is the x free GPUs times the
// share of demand (above: the suffix sums of the weights) that needs more than
// x free on a node, so cannot use them.
func fragGrowth(above []float64, free, n int) float64 {
	f := func(x int) float64 {
		if x+1 >= len(above) {
			return 0
		}
		return float64(x) * above[x+1]
	}
	return f(free-n) - f(free)
}

// suffix returns s[i] = Σ w[j] for j ≥ i.
func suffix(w []float64) []float64 {
	s := make([]float64, len(w)+1)
	for i := len(w) - 1; i >= 0; i-- {
		s[i] = s[i+1] + w[i]
	}
	return s
}

// oneNodeByShapes is oneNode's bin-packing choice made with the expected
// workload w of card k: among the nodes of cluster c with r.n or more free,
// the one of least fragmentation growth; ties to the fewest free, then the
// lowest index.
func (f *finder) oneNodeByShapes(r *creq, c int, k int32, w []float64) (int32, bool) {
	above := suffix(w)
	best, bestFree := int32(-1), 0
	var bestG float64
	consider := func(nd int32, free int) {
		if free < r.n {
			return
		}
		g := fragGrowth(above, free, r.n)
		const eps = 1e-9
		if best < 0 || g < bestG-eps || g <= bestG+eps && (free < bestFree || free == bestFree && nd < best) {
			best, bestFree, bestG = nd, free, g
		}
	}
	if f.m != nil {
		for _, nd := range f.m.nodes {
			if ni := &f.ix.nodes[nd]; int(ni.cluster) == c && ni.card == k {
				consider(nd, popcount(f.avail(r, nd)))
			}
		}
	}
	b := f.st.bucket[c*len(f.ix.cards)+int(k)]
	for free := r.n; free < len(b); free++ {
		for _, nd := range b[free] {
			if f.m != nil && f.m.g[nd] != 0 {
				continue
			}
			consider(nd, free)
			break
		}
	}
	return best, best >= 0
}
