package placement

import (
	"fmt"
	"slices"
)

// LevelMode says how a request's topology level binds.
type LevelMode string

// Level modes.
const (
	// Required: the whole gang inside one domain of the level, or not placed.
	Required LevelMode = "required"
	// Preferred: the tightest domain that fits, from the level up to the whole
	// cluster.
	Preferred LevelMode = "preferred"
)

// Request is what a job asks to be placed on.
type Request struct {
	// GPUs is the gang's size: whole GPUs, or MIG instances when MIGProfile is set.
	GPUs int `json:"gpus"`
	// MIGProfile asks for instances of this profile (e.g. "1g.10gb") instead of
	// whole GPUs.
	MIGProfile string `json:"mig_profile,omitempty"`
	// Cards are the acceptable card types, tried in order (cheapest first); a
	// gang gets one card type.
	Cards []string `json:"cards"`
	// Cluster, when set, is the only cluster the job may run in.
	Cluster string `json:"cluster,omitempty"`
	// Clusters, when set (instead of Cluster), are the clusters the job may run
	// in; the finder and the reservation's estimate consider only these. Empty,
	// with Cluster empty: any.
	Clusters []string `json:"clusters,omitempty"`
	// GPUsPerNode, when set, splits the gang into GPUs/GPUsPerNode nodes of
	// exactly GPUsPerNode each (instances, for MIG).
	GPUsPerNode int `json:"gpus_per_node,omitempty"`
	// Level is a topology level the gang should stay inside, bound by LevelMode
	// (Required when empty).
	Level     string    `json:"level,omitempty"`
	LevelMode LevelMode `json:"level_mode,omitempty"`
	// Spread puts the gang on the least-used nodes, one GPU per node as far as
	// it goes (online inference, for failure isolation); the default bin-packs
	// it onto the most-used nodes that fit, so whole nodes stay free.
	Spread bool `json:"spread,omitempty"`
	// Fraction asks for a share of one GPU instead of whole GPUs, in
	// thousandths of a GPU (1–999; GPUs must be 1), shared by Sharing with jobs
	// of that mode only (see share.go).
	Fraction int     `json:"fraction,omitempty"`
	Sharing  Sharing `json:"sharing,omitempty"`
	// MemoryMiB is a fraction's GPU memory limit; 0: the fraction's share of
	// the card's memory. A card with less memory than this is not tried.
	MemoryMiB int `json:"memory_mib,omitempty"`
	// FirstFit takes nodes in the fleet's order, each giving what it has: what a
	// node layer that knows nothing of the gang's neighbours does. The simulator
	// uses it for today's GPU-counting admission; the scheduler does not.
	FirstFit bool `json:"first_fit,omitempty"`
}

// creq is a request compiled against an index.
type creq struct {
	n, perNode int
	cards      []int32
	profile    int     // -1: whole GPUs
	clusters   []int32 // nil: any; else the allowed clusters, ascending
	level      int     // -1: none
	required   bool
	spread     bool
	firstFit   bool
	// frac, mode and mem are a fraction's (frac 0: whole GPUs or MIG).
	frac int
	mode Sharing
	mem  int
}

// compile checks r against the fleet.
func (ix *index) compile(r Request) (creq, error) {
	c := creq{n: r.GPUs, perNode: r.GPUsPerNode, profile: -1, level: -1, spread: r.Spread, firstFit: r.FirstFit}
	bad := func(field, format string, args ...any) (creq, error) {
		return creq{}, fmt.Errorf("%w: %s: %s", ErrInvalidRequest, field, fmt.Sprintf(format, args...))
	}
	if r.GPUs <= 0 {
		return bad("gpus", "%d must be positive", r.GPUs)
	}
	if r.GPUsPerNode < 0 || r.GPUsPerNode > 0 && r.GPUs%r.GPUsPerNode != 0 {
		return bad("gpus_per_node", "%d must be positive and divide gpus %d", r.GPUsPerNode, r.GPUs)
	}
	if len(r.Cards) == 0 {
		return bad("cards", "name at least one card type")
	}
	for _, name := range r.Cards {
		k, ok := ix.cardIdx[name]
		if !ok {
			return bad("cards", "no card type %q in the fleet", name)
		}
		if slices.Contains(c.cards, int32(k)) {
			return bad("cards", "%q is listed twice", name)
		}
		c.cards = append(c.cards, int32(k))
	}
	if r.MIGProfile != "" {
		p, ok := ix.profileIdx[r.MIGProfile]
		if !ok {
			return bad("mig_profile", "no MIG profile %q (the fleet's cards have %v)", r.MIGProfile, ix.profiles)
		}
		c.profile = p
	}
	if err := c.compileShare(r); err != nil {
		return creq{}, err
	}
	if r.Cluster != "" && len(r.Clusters) > 0 {
		return bad("clusters", "set with cluster %q: name one cluster or a set, not both", r.Cluster)
	}
	if r.Cluster != "" {
		ci, ok := ix.clusterIdx[r.Cluster]
		if !ok {
			return bad("cluster", "no cluster %q in the fleet", r.Cluster)
		}
		c.clusters = []int32{int32(ci)}
	}
	for _, name := range r.Clusters {
		ci, ok := ix.clusterIdx[name]
		if !ok {
			return bad("clusters", "no cluster %q in the fleet", name)
		}
		if slices.Contains(c.clusters, int32(ci)) {
			return bad("clusters", "%q is listed twice", name)
		}
		c.clusters = append(c.clusters, int32(ci))
	}
	slices.Sort(c.clusters)
	if r.Level != "" {
		l, ok := ix.levelIdx[r.Level]
		if !ok {
			return bad("level", "no topology level %q (levels are %v)", r.Level, ix.fleet.Levels)
		}
		c.level = l
		switch r.LevelMode {
		case Required, "":
			c.required = true
		case Preferred:
		default:
			return bad("level_mode", "%q is neither %q nor %q", r.LevelMode, Required, Preferred)
		}
	}
	return c, nil
}

// allows reports whether the request may use cluster c.
func (c *creq) allows(cl int) bool {
	_, ok := slices.BinarySearch(c.clusters, int32(cl))
	return c.clusters == nil || ok
}

// Placement is where a gang runs: one cluster, one card type, and per node the
// GPUs (or MIG instances) it holds.
type Placement struct {
	Cluster string
	Card    string
	// MIGProfile is set when the placement is of MIG instances.
	MIGProfile string
	// Sharing is set when the placement is a share of one GPU.
	Sharing Sharing
	units   []unit
	ix      *index
}

// NodeAlloc is what a placement holds on one node.
type NodeAlloc struct {
	Node string `json:"node"`
	// GPUs are GPU indices on the node (whole GPUs).
	GPUs []int `json:"gpus,omitempty"`
	// Slices are MIG instances.
	Slices []Slice `json:"slices,omitempty"`
	// Shares are shares of GPUs (a fraction's placement holds one).
	Shares []Share `json:"shares,omitempty"`
}

// Slice is one MIG instance: the GPU it is on and its place in that GPU's layout.
type Slice struct {
	GPU     int    `json:"gpu"`
	Index   int    `json:"index"`
	Profile string `json:"profile"`
}

// IsZero reports whether p holds nothing.
func (p Placement) IsZero() bool { return len(p.units) == 0 }

// Count is the GPUs (or instances, or shares) the placement holds.
func (p Placement) Count() int {
	n := 0
	for _, u := range p.units {
		n += popcount(u.g) + popcount(u.s) + b2i(u.frac > 0)
	}
	return n
}

// Nodes lists the placement by node, in the fleet's node order.
func (p Placement) Nodes() []NodeAlloc {
	out := make([]NodeAlloc, 0, len(p.units))
	for _, u := range p.units {
		n := &p.ix.nodes[u.node]
		a := NodeAlloc{Node: n.name}
		for g := u.g; g != 0; g &= g - 1 {
			a.GPUs = append(a.GPUs, popcount((g&-g)-1))
		}
		for s := u.s; s != 0; s &= s - 1 {
			b := popcount((s & -s) - 1)
			a.Slices = append(a.Slices, Slice{GPU: int(n.sliceGPU[b]), Index: int(n.sliceIdx[b]), Profile: p.ix.profiles[n.sliceProf[b]]})
		}
		if u.frac > 0 {
			a.Shares = append(a.Shares, Share{GPU: int(u.sgpu), Fraction: int(u.frac), Mode: p.Sharing, MemMiB: int(u.mem)})
		}
		out = append(out, a)
	}
	return out
}

// String is the placement in one line: "c1 H100-80GB n03[0,1] n04[0-7]".
func (p Placement) String() string {
	s := p.Cluster + " " + p.Card
	if p.MIGProfile != "" {
		s += " " + p.MIGProfile
	}
	if p.Sharing != "" {
		s += " " + string(p.Sharing)
	}
	for _, a := range p.Nodes() {
		s += " " + a.Node + "["
		for i, g := range a.GPUs {
			if i > 0 {
				s += ","
			}
			s += fmt.Sprint(g)
		}
		for i, sl := range a.Slices {
			if i > 0 {
				s += ","
			}
			s += fmt.Sprintf("%d.%d", sl.GPU, sl.Index)
		}
		for _, sh := range a.Shares {
			s += fmt.Sprintf("%d:%d/1000,%dMiB", sh.GPU, sh.Fraction, sh.MemMiB)
		}
		s += "]"
	}
	return s
}

// NewPlacement builds a placement from node allocations (as a journal or an
// executor reports them), for State.Place. It checks that every node, GPU and
// instance exists, and that they are of one cluster and card type.
func (s *State) NewPlacement(nodes []NodeAlloc) (Placement, error) {
	ix := s.ix
	p := Placement{ix: ix}
	for i, a := range nodes {
		n, ok := ix.nodeIdx[a.Node]
		if !ok {
			return Placement{}, fmt.Errorf("%w: nodes[%d]: no node %q", ErrInvalidRequest, i, a.Node)
		}
		ni := &ix.nodes[n]
		cl, card := ix.clusters[ni.cluster].name, ix.cards[ni.card].Name
		if i == 0 {
			p.Cluster, p.Card = cl, card
		} else if cl != p.Cluster || card != p.Card {
			return Placement{}, fmt.Errorf("%w: nodes[%d]: %s is %s in %s, the gang's first node %s in %s", ErrInvalidRequest, i, a.Node, card, cl, p.Card, p.Cluster)
		}
		u := unit{node: n}
		for _, g := range a.GPUs {
			if g < 0 || g >= ni.gpus || ni.whole&(1<<g) == 0 {
				return Placement{}, fmt.Errorf("%w: nodes[%d].gpus: %s has no whole GPU %d", ErrInvalidRequest, i, a.Node, g)
			}
			u.g |= 1 << g
		}
		for _, sl := range a.Slices {
			b := -1
			for k := range ni.sliceGPU {
				if int(ni.sliceGPU[k]) == sl.GPU && int(ni.sliceIdx[k]) == sl.Index {
					b = k
				}
			}
			if b < 0 {
				return Placement{}, fmt.Errorf("%w: nodes[%d].slices: %s has no MIG instance %d on GPU %d", ErrInvalidRequest, i, a.Node, sl.Index, sl.GPU)
			}
			p.MIGProfile = ix.profiles[ni.sliceProf[b]]
			u.s |= 1 << b
		}
		if err := p.addShares(&u, i, a); err != nil {
			return Placement{}, err
		}
		p.units = append(p.units, u)
	}
	return p, nil
}
