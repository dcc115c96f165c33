package placement

import (
	"fmt"
	"slices"
	"time"
)

// State is the fleet and what each placed job holds on it. It never gives a
// GPU or MIG instance twice: Place checks every one is free.
type State struct {
	ix     *index
	v      view
	allocs map[string]*alloc
	// cfree is whole GPUs free per cluster and card (cluster*cards+card), dfree
	// per domain and card (domain*cards+card).
	cfree, dfree []int
	// bucket holds each cluster's nodes of a card by free whole GPUs:
	// bucket[cluster*cards+card][free]; bpos is a node's place in its bucket.
	bucket [][][]int32
	bpos   []int32
	// shared are the shared GPUs (share.go).
	shared map[shareKey]*sharedGPU
	// shapes is the expected workload per card (shapes.go).
	shapes shapeBook
}

// alloc is one placed job.
type alloc struct {
	id string
	p  Placement
	// end is when the job is expected to end (its admission plus its time limit,
	// or its pool's maximum duration); zero: unknown.
	end time.Time
}

// NewState returns the fleet f, validated, with nothing placed.
func NewState(f Fleet) (*State, error) {
	ix, err := newIndex(f)
	if err != nil {
		return nil, err
	}
	nc := len(ix.cards)
	s := &State{ix: ix, v: ix.fullView(), allocs: map[string]*alloc{},
		cfree: make([]int, len(ix.clusters)*nc), dfree: make([]int, len(ix.domains)*nc),
		bucket: make([][][]int32, len(ix.clusters)*nc), bpos: make([]int32, len(ix.nodes)), shared: map[shareKey]*sharedGPU{}}
	for i := range s.bucket {
		s.bucket[i] = make([][]int32, ix.maxGPUs+1)
	}
	for i, n := range ix.nodes {
		f := popcount(n.whole)
		s.cfree[int(n.cluster)*nc+int(n.card)] += f
		for _, d := range n.domain {
			s.dfree[int(d)*nc+int(n.card)] += f
		}
		b := &s.bucket[int(n.cluster)*nc+int(n.card)][f]
		s.bpos[i] = int32(len(*b))
		*b = append(*b, int32(i))
	}
	return s, nil
}

// Fleet returns the fleet the state was built from.
func (s *State) Fleet() Fleet { return s.ix.fleet }

// Place gives p to job id, expected to end at end (zero: unknown). It fails,
// changing nothing, if any GPU or instance of p is taken.
func (s *State) Place(id string, p Placement, end time.Time) error {
	if _, ok := s.allocs[id]; ok {
		return fmt.Errorf("placement: place %s: %w", id, ErrJobPlaced)
	}
	if p.ix != s.ix {
		return fmt.Errorf("placement: place %s: %w: the placement is of another fleet", id, ErrInvalidRequest)
	}
	for _, u := range p.units {
		if u.g&^s.v.g[u.node] != 0 || u.s&^s.v.s[u.node] != 0 {
			return fmt.Errorf("placement: place %s on %s: %w (GPU bits %b, slice bits %b)", id, s.ix.nodes[u.node].name,
				ErrTaken, u.g&^s.v.g[u.node], u.s&^s.v.s[u.node])
		}
		if u.frac > 0 {
			if why := s.shareProblem(u, p.Sharing); why != "" {
				return fmt.Errorf("placement: place %s on %s: %w (%s)", id, s.ix.nodes[u.node].name, ErrTaken, why)
			}
		}
	}
	for _, u := range p.units {
		s.take(u)
		if u.frac > 0 {
			s.moveShare(u, p.Sharing, false)
		}
	}
	s.allocs[id] = &alloc{id: id, p: p, end: end}
	return nil
}

// Release gives back what job id holds.
func (s *State) Release(id string) error {
	a, ok := s.allocs[id]
	if !ok {
		return fmt.Errorf("placement: release %s: %w", id, ErrUnknownJob)
	}
	for _, u := range a.p.units {
		s.give(u)
		if u.frac > 0 {
			s.moveShare(u, a.p.Sharing, true)
		}
	}
	delete(s.allocs, id)
	return nil
}

// SetEnd changes job id's expected end (its time limit changed).
func (s *State) SetEnd(id string, end time.Time) error {
	a, ok := s.allocs[id]
	if !ok {
		return fmt.Errorf("placement: set end of %s: %w", id, ErrUnknownJob)
	}
	a.end = end
	return nil
}

// Placed returns job id's placement.
func (s *State) Placed(id string) (Placement, bool) {
	a, ok := s.allocs[id]
	if !ok {
		return Placement{}, false
	}
	return a.p, true
}

// Jobs returns the placed jobs' IDs, sorted.
func (s *State) Jobs() []string {
	ids := make([]string, 0, len(s.allocs))
	for id := range s.allocs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Free returns the free whole GPUs of card in cluster.
func (s *State) Free(cluster, card string) int {
	c, ok1 := s.ix.clusterIdx[cluster]
	k, ok2 := s.ix.cardIdx[card]
	if !ok1 || !ok2 {
		return 0
	}
	return s.cfree[c*len(s.ix.cards)+k]
}

// Stranded returns the free whole GPUs of card on nodes that are partly used:
// GPUs a job asking for a whole node cannot get.
func (s *State) Stranded(card string) int {
	k, ok := s.ix.cardIdx[card]
	n := 0
	for i, ni := range s.ix.nodes {
		if ok && int(ni.card) == k && s.v.g[i] != ni.whole {
			n += popcount(s.v.g[i])
		}
	}
	return n
}

func (s *State) take(u unit) { s.move(u, false) }
func (s *State) give(u unit) { s.move(u, true) }

// move takes (or gives back) u's GPUs and slices, keeping the counts exact.
func (s *State) move(u unit, free bool) {
	n := &s.ix.nodes[u.node]
	before := popcount(s.v.g[u.node])
	if free {
		s.v.g[u.node] |= u.g
		s.v.s[u.node] |= u.s
	} else {
		s.v.g[u.node] &^= u.g
		s.v.s[u.node] &^= u.s
	}
	after := popcount(s.v.g[u.node])
	if before == after {
		return
	}
	nc := len(s.ix.cards)
	ck := int(n.cluster)*nc + int(n.card)
	s.cfree[ck] += after - before
	for _, d := range n.domain {
		s.dfree[int(d)*nc+int(n.card)] += after - before
	}
	// Move the node from bucket before to bucket after.
	b := s.bucket[ck]
	old := b[before]
	i := s.bpos[u.node]
	last := old[len(old)-1]
	old[i] = last
	s.bpos[last] = i
	b[before] = old[:len(old)-1]
	s.bpos[u.node] = int32(len(b[after]))
	b[after] = append(b[after], u.node)
}

// check recounts the state from its allocations: every GPU and slice held by
// at most one job, and the counts match. Tests call it.
func (s *State) check() error {
	v := s.ix.fullView()
	seen := map[shareKey]bool{}
	for _, id := range s.Jobs() {
		for _, u := range s.allocs[id].p.units {
			if u.g&^v.g[u.node] != 0 || u.s&^v.s[u.node] != 0 {
				return fmt.Errorf("job %s: %v given twice", id, u)
			}
			v.g[u.node] &^= u.g
			v.s[u.node] &^= u.s
			if k := (shareKey{u.node, u.sgpu}); u.frac > 0 && !seen[k] {
				if v.g[u.node]&(1<<u.sgpu) == 0 {
					return fmt.Errorf("job %s: shares GPU %d of node %d, held whole", id, u.sgpu, u.node)
				}
				v.g[u.node] &^= 1 << u.sgpu
				seen[k] = true
			}
		}
	}
	if err := s.checkShares(); err != nil {
		return err
	}
	if !slices.Equal(v.g, s.v.g) || !slices.Equal(v.s, s.v.s) {
		return fmt.Errorf("free bits differ from the allocations")
	}
	nc := len(s.ix.cards)
	cfree := make([]int, len(s.cfree))
	for i, n := range s.ix.nodes {
		cfree[int(n.cluster)*nc+int(n.card)] += popcount(v.g[i])
		if s.bucket[int(n.cluster)*nc+int(n.card)][popcount(v.g[i])][s.bpos[i]] != int32(i) {
			return fmt.Errorf("node %s is not in its bucket", n.name)
		}
	}
	if !slices.Equal(cfree, s.cfree) {
		return fmt.Errorf("cluster free counts %v, recounted %v", s.cfree, cfree)
	}
	return nil
}

// FreeGPUs returns node's whole GPUs that no job holds, by index, ascending
// (nil for a node the fleet does not have).
func (s *State) FreeGPUs(node string) []int {
	nd, ok := s.ix.nodeIdx[node]
	if !ok {
		return nil
	}
	var out []int
	for g := s.v.g[nd] & s.ix.nodes[nd].whole; g != 0; g &= g - 1 {
		out = append(out, popcount((g&-g)-1))
	}
	return out
}
