package frag

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// Policy chooses where a task of shape s goes on c.
type Policy interface {
	// Name is the policy's name in tables.
	Name() string
	// Choose picks a placement that fits; false when the shape fits nowhere.
	// It does not change c.
	Choose(c *Cluster, s Shape) (Placement, bool)
}

// Policy names accepted by NewPolicy.
const (
	RandomFit  = "random-fit"
	BestFit    = "best-fit"
	GPUPacking = "gpu-packing"
	FGD        = "fgd"
	Gpupool    = "gpupool"
)

// PolicyNames are the policies NewPolicy knows, baselines first.
var PolicyNames = []string{RandomFit, BestFit, GPUPacking, FGD, Gpupool}

// NewPolicy builds the named policy for a cluster expecting workload w; seed
// drives its random choices (random-fit's pick, ties elsewhere).
func NewPolicy(name string, w Workload, seed uint64) (Policy, error) {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	switch name {
	case RandomFit:
		return &randomFit{rng: rng}, nil
	case BestFit:
		return &scored{name: name, rng: rng, score: bestFitScore, perNode: true}, nil
	case GPUPacking:
		return &scored{name: name, rng: rng, score: packingScore}, nil
	case FGD:
		return &scored{name: name, rng: rng, score: fgdScore(newFragCache(w))}, nil
	case Gpupool:
		return newGpupool(w, rng), nil
	}
	return nil, fmt.Errorf("frag: policy %q: unknown (want one of %v)", name, PolicyNames)
}

// scoreFunc scores putting s on GPUs gpus of node i of c; lower is better,
// compared element by element.
type scoreFunc func(c *Cluster, i int, s Shape, gpus []int) []float64

// scored is a policy that scores every fitting (node, GPUs) candidate and takes
// the lowest, breaking exact ties uniformly at random.
type scored struct {
	name    string
	rng     *rand.Rand
	score   scoreFunc
	perNode bool // the score ignores which GPUs; pick the best-fit GPU for a fraction
	buf     [][]int
}

func (p *scored) Name() string { return p.name }

func (p *scored) Choose(c *Cluster, s Shape) (Placement, bool) {
	var best []float64
	var pick Placement
	ties := 0
	for i := range c.Nodes {
		p.buf = c.Nodes[i].candidates(s, p.buf)
		if p.perNode && len(p.buf) > 1 {
			p.buf = append(p.buf[:0], tightest(&c.Nodes[i], p.buf))
		}
		for _, g := range p.buf {
			sc := p.score(c, i, s, g)
			cmp := -1 // the first candidate
			if ties > 0 {
				cmp = cmpScore(sc, best)
			}
			switch cmp {
			case -1:
				best, pick, ties = sc, Placement{Node: i, GPUs: g}, 1
			case 0:
				ties++
				if p.rng.IntN(ties) == 0 {
					pick = Placement{Node: i, GPUs: g}
				}
			}
		}
	}
	if ties == 0 {
		return Placement{}, false
	}
	pick.GPUs = slices.Clone(pick.GPUs)
	return pick, true
}

// cmpScore compares a candidate's score with the best so far.
func cmpScore(a, best []float64) int {
	for i := range a {
		if a[i] != best[i] {
			if a[i] < best[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

// randomFit takes a node where the shape fits uniformly at random (the
// paper's random-fit), and on it one of the node's candidates uniformly at
// random.
type randomFit struct {
	rng *rand.Rand
	buf [][]int
}

func (p *randomFit) Name() string { return RandomFit }

func (p *randomFit) Choose(c *Cluster, s Shape) (Placement, bool) {
	var pick Placement
	fits := 0
	for i := range c.Nodes {
		p.buf = c.Nodes[i].candidates(s, p.buf)
		if len(p.buf) == 0 {
			continue
		}
		// Reservoir sampling: node i replaces the pick with probability 1/fits.
		if fits++; p.rng.IntN(fits) == 0 {
			pick = Placement{Node: i, GPUs: slices.Clone(p.buf[p.rng.IntN(len(p.buf))])}
		}
	}
	return pick, fits > 0
}

// tightest is the candidate whose GPU has the least free capacity (best fit
// within the node).
func tightest(n *Node, cands [][]int) []int {
	best := cands[0]
	for _, g := range cands[1:] {
		if n.GPUFree[g[0]] < n.GPUFree[best[0]] {
			best = g
		}
	}
	return best
}

// bestFitScore is the weighted free capacity left on the node after placing s,
// CPU and GPU each normalised by the largest node's: the tighter, the better.
func bestFitScore(c *Cluster, i int, s Shape, _ []int) []float64 {
	n := &c.Nodes[i]
	maxCPU, maxGPU := c.maxCPU, c.maxGPUs
	free := 0
	for _, g := range n.GPUFree {
		free += g
	}
	cpu := float64(n.CPUFree-s.CPUMilli) / float64(maxCPU)
	gpu := float64(free-s.DemandMilli()) / float64(maxGPU*MilliGPU)
	return []float64{0.5*cpu + 0.5*gpu}
}

// packingScore ranks, best first: sharing GPUs already in use (the least free
// of them first); then whole free GPUs on a node already in use (the fewest);
// then an empty node (the one with the fewest GPUs).
func packingScore(c *Cluster, i int, s Shape, gpus []int) []float64 {
	n := &c.Nodes[i]
	fullFree := 0
	for _, g := range n.GPUFree {
		if g == MilliGPU {
			fullFree++
		}
	}
	if fullFree == len(n.GPUFree) {
		return []float64{2, float64(len(n.GPUFree))}
	}
	usedFull, freeOnUsed := 0, 0
	for _, g := range gpus {
		if n.GPUFree[g] == MilliGPU {
			usedFull++
		}
		freeOnUsed += n.GPUFree[g]
	}
	if usedFull > 0 {
		return []float64{1, float64(usedFull)}
	}
	return []float64{0, float64(freeOnUsed)}
}

// fgdScore is the paper's FGD: the growth of the node's fragmentation
// (NodeFrag over the expected workload) that the placement causes.
func fgdScore(fc *fragCache) scoreFunc {
	return func(c *Cluster, i int, s Shape, gpus []int) []float64 {
		return []float64{fragDelta(fc, &c.Nodes[i], s, gpus)}
	}
}

// fragDelta is NodeFrag after placing s on gpus of n minus NodeFrag before;
// n is changed and restored.
func fragDelta(fc *fragCache, n *Node, s Shape, gpus []int) float64 {
	before := fc.frag(n)
	n.CPUFree -= s.CPUMilli
	n.MemFree -= s.MemoryMiB
	for _, g := range gpus {
		n.GPUFree[g] -= s.perGPU()
	}
	after := fc.frag(n)
	n.CPUFree += s.CPUMilli
	n.MemFree += s.MemoryMiB
	for _, g := range gpus {
		n.GPUFree[g] += s.perGPU()
	}
	return after - before
}
