package placement

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"sync"
)

// index is a validated fleet compiled to numbers: nodes, clusters, card types,
// MIG profiles and topology domains by index.
type index struct {
	fleet      Fleet
	cards      []Card
	cardIdx    map[string]int
	nodes      []nodeInfo
	nodeIdx    map[string]int32
	clusters   []clusterInfo
	clusterIdx map[string]int
	levelIdx   map[string]int
	domains    []domainInfo
	// levelDomains are each level's domains, by cluster: levelDomains[l][c].
	levelDomains [][][]int32
	profiles     []string // every MIG profile name any card has
	profileIdx   map[string]int
	maxGPUs      int
	// fitsMu guards fits: whether a request shape fits the empty fleet, asked
	// once per shape (every submit asks, and the answer only depends on the
	// shape; searching the whole empty fleet each time was a fifth of a submit's
	// time at 1,000 nodes).
	fitsMu sync.Mutex
	fits   map[string]bool
}

// fitsEmpty reports whether c fits the empty fleet, remembered per shape.
func (ix *index) fitsEmpty(c *creq) bool {
	var b strings.Builder
	for _, v := range []int{c.n, c.perNode, c.profile, c.level, b2i(c.required), b2i(c.spread), b2i(c.firstFit), c.frac, c.mem} {
		b.WriteString(strconv.Itoa(v))
		b.WriteByte(',')
	}
	b.WriteString(string(c.mode))
	for _, cl := range c.clusters {
		b.WriteString(strconv.Itoa(int(cl)))
		b.WriteByte('c')
	}
	for _, cd := range c.cards {
		b.WriteString(strconv.Itoa(int(cd)))
		b.WriteByte(' ')
	}
	key := b.String()
	ix.fitsMu.Lock()
	ok, known := ix.fits[key]
	ix.fitsMu.Unlock()
	if known {
		return ok
	}
	full := ix.fullView()
	f := finder{ix: ix, v: &full}
	_, ok = f.find(c)
	ix.fitsMu.Lock()
	if ix.fits == nil {
		ix.fits = map[string]bool{}
	}
	ix.fits[key] = ok
	ix.fitsMu.Unlock()
	return ok
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

type nodeInfo struct {
	name    string
	cluster int32
	card    int32
	gpus    int
	// whole is the bits of the GPUs given whole (those with no MIG layout).
	whole uint64
	// sliceGPU and sliceIdx say which GPU and which instance of its layout each
	// slice bit is; profBits are the slice bits of each profile (by profileIdx).
	sliceGPU, sliceIdx []int8
	sliceProf          []int16
	profBits           []uint64
	// domain is the node's domain at each level.
	domain []int32
}

type clusterInfo struct {
	name string
	// byCard are the cluster's nodes of each card type.
	byCard [][]int32
}

type domainInfo struct {
	level   int
	cluster int32
	name    string
	// byCard are the domain's nodes of each card type.
	byCard [][]int32
}

func newIndex(f Fleet) (*index, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	ix := &index{fleet: f, cards: f.Cards, cardIdx: map[string]int{}, nodeIdx: map[string]int32{},
		clusterIdx: map[string]int{}, levelIdx: map[string]int{}, profileIdx: map[string]int{}}
	for i, c := range f.Cards {
		ix.cardIdx[c.Name] = i
		for _, p := range MIGProfiles(c.MemoryGiB) {
			if _, ok := ix.profileIdx[p.Name]; !ok {
				ix.profileIdx[p.Name] = len(ix.profiles)
				ix.profiles = append(ix.profiles, p.Name)
			}
		}
	}
	for i, l := range f.Levels {
		ix.levelIdx[l] = i
	}
	nc := len(f.Cards)
	ix.levelDomains = make([][][]int32, len(f.Levels))
	for l := range f.Levels {
		ix.levelDomains[l] = make([][]int32, len(f.Clusters))
	}
	for ci, c := range f.Clusters {
		ix.clusterIdx[c.Name] = ci
		cl := clusterInfo{name: c.Name, byCard: make([][]int32, nc)}
		domainAt := make([]map[string]int32, len(f.Levels))
		for l := range domainAt {
			domainAt[l] = map[string]int32{}
		}
		for _, n := range c.Nodes {
			id := int32(len(ix.nodes))
			k := ix.cardIdx[n.Card]
			ni := nodeInfo{name: n.Name, cluster: int32(ci), card: int32(k), gpus: n.GPUs, domain: make([]int32, len(f.Levels))}
			for g := range n.GPUs {
				if g >= len(n.MIG) || len(n.MIG[g]) == 0 {
					ni.whole |= 1 << g
				}
			}
			if len(n.MIG) > 0 {
				ni.profBits = make([]uint64, len(ix.profiles))
				for g, layout := range n.MIG {
					for s, p := range layout {
						b := len(ni.sliceGPU)
						ni.sliceGPU = append(ni.sliceGPU, int8(g))
						ni.sliceIdx = append(ni.sliceIdx, int8(s))
						ni.sliceProf = append(ni.sliceProf, int16(ix.profileIdx[p]))
						ni.profBits[ix.profileIdx[p]] |= 1 << b
					}
				}
			}
			for l, lv := range f.Levels {
				name := n.Topology[lv]
				d, ok := domainAt[l][name]
				if !ok {
					d = int32(len(ix.domains))
					ix.domains = append(ix.domains, domainInfo{level: l, cluster: int32(ci), name: name, byCard: make([][]int32, nc)})
					domainAt[l][name] = d
					ix.levelDomains[l][ci] = append(ix.levelDomains[l][ci], d)
				}
				ix.domains[d].byCard[k] = append(ix.domains[d].byCard[k], id)
				ni.domain[l] = d
			}
			cl.byCard[k] = append(cl.byCard[k], id)
			ix.maxGPUs = max(ix.maxGPUs, n.GPUs)
			ix.nodes = append(ix.nodes, ni)
			ix.nodeIdx[n.Name] = id
		}
		ix.clusters = append(ix.clusters, cl)
	}
	return ix, nil
}

// slices returns the slice bits of the instances on GPUs gpuBits of node n.
func (ix *index) slicesOn(n int32, gpuBits uint64) uint64 {
	var out uint64
	for b, g := range ix.nodes[n].sliceGPU {
		if gpuBits&(1<<g) != 0 {
			out |= 1 << b
		}
	}
	return out
}

// fullView is every GPU and slice of the fleet free.
func (ix *index) fullView() view {
	v := view{g: make([]uint64, len(ix.nodes)), s: make([]uint64, len(ix.nodes))}
	for i, n := range ix.nodes {
		v.g[i] = n.whole
		v.s[i] = 1<<len(n.sliceGPU) - 1
	}
	return v
}

// view is the free GPUs (g, whole GPUs only) and MIG slices (s) of each node.
type view struct{ g, s []uint64 }

func (v view) clone() view {
	return view{g: append([]uint64(nil), v.g...), s: append([]uint64(nil), v.s...)}
}

// unit is what a placement takes on one node: GPU bits and slice bits, or
// (frac > 0) a share of GPU sgpu: frac thousandths and mem MiB of its memory.
type unit struct {
	node int32
	g, s uint64
	sgpu int8
	frac int16
	mem  int32
}

func (u unit) String() string { return fmt.Sprintf("node %d gpus %b slices %b", u.node, u.g, u.s) }

func popcount(x uint64) int { return bits.OnesCount64(x) }

// lowest returns the k lowest set bits of x.
func lowest(x uint64, k int) uint64 {
	var out uint64
	for range k {
		b := x & -x
		out |= b
		x &^= b
	}
	return out
}
