package placement

import (
	"fmt"
	"slices"
)

// Fragmentation is one resource domain's (a cluster's whole GPUs of one card
// type) free capacity as the jobs that wait for it see it (issue 44).
type Fragmentation struct {
	Cluster string `json:"cluster"`
	Card    string `json:"card"`
	// GPUs is the domain's whole GPUs; Free those no job holds.
	GPUs int `json:"gpus"`
	Free int `json:"free"`
	// Stranded is the free GPUs on nodes where none of the waiting shapes
	// that may use the domain fits: free, but of no use to the queue until
	// something else on those nodes ends. Zero when nothing waits for the
	// domain (its free GPUs are idle, not stranded).
	Stranded int `json:"stranded"`
	// Waiting is how many waiting requests may use the domain.
	Waiting int `json:"waiting"`
	// FreeNodes is the nodes with every whole GPU free.
	FreeNodes int `json:"free_nodes"`
	// LargestOnNode is the most free GPUs on one node: the largest gang that
	// could start now without crossing nodes (a gang without gpus_per_node may
	// span nodes, up to Free; one of whole nodes gets FreeNodes of them).
	LargestOnNode int `json:"largest_on_node"`
}

// Fragmentation reports, per cluster and card type with whole GPUs, the free
// capacity and the part of it that none of waiting can use now (Compiled
// requests of whole GPUs, and of fractions, which may open any free GPU; MIG
// requests are not counted, and a shared GPU is not free). A shape may use a
// node's free GPUs when the node is of one of its cards and its cluster and,
// as the finder places gangs, the node has gpus_per_node free (when set), or
// the whole gang, or the domain has as many free as the gang (a gang without
// gpus_per_node spans nodes). This is the FGD paper's per-node fragmentation
// with the queue's shapes as the workload; topology levels are not taken into
// account.
func (s *State) Fragmentation(waiting []Compiled) []Fragmentation {
	nc := len(s.ix.cards)
	out := make([]Fragmentation, len(s.ix.clusters)*nc)
	reqs := shapes(s.ix, waiting)
	for nd := range s.ix.nodes {
		n := &s.ix.nodes[nd]
		whole := popcount(n.whole)
		if whole == 0 {
			continue
		}
		i := int(n.cluster)*nc + int(n.card)
		f := popcount(s.v.g[nd] & n.whole)
		out[i].GPUs += whole
		out[i].Free += f
		if f == whole {
			out[i].FreeNodes++
		}
		out[i].LargestOnNode = max(out[i].LargestOnNode, f)
	}
	for _, r := range reqs {
		for c := range s.ix.clusters {
			for k := range s.ix.cards {
				if r.mayUseDomain(c, int32(k)) {
					out[c*nc+k].Waiting += r.count
				}
			}
		}
	}
	for nd := range s.ix.nodes {
		n := &s.ix.nodes[nd]
		d := &out[int(n.cluster)*nc+int(n.card)]
		f := popcount(s.v.g[nd] & n.whole)
		if d.Waiting == 0 || f == 0 {
			continue
		}
		usable := false
		for _, r := range reqs {
			if r.mayUse(n) && fitsNode(r.creq, f, popcount(n.whole), d.Free) {
				usable = true
				break
			}
		}
		if !usable {
			d.Stranded += f
		}
	}
	res := out[:0]
	for i := range out {
		if out[i].GPUs == 0 {
			continue
		}
		out[i].Cluster, out[i].Card = s.ix.clusters[i/nc].name, s.ix.cards[i%nc].Name
		res = append(res, out[i])
	}
	return res
}

// shape is a waiting request's shape and how many wait with it.
type shape struct {
	*creq
	count int
}

// shapes are the distinct shapes of waiting's whole-GPU and fraction requests
// of ix (a fraction as one GPU): a queue of thousands has few, and each is
// checked against every node.
func shapes(ix *index, waiting []Compiled) []shape {
	type key struct {
		n, perNode      int
		clusters, cards string
	}
	seen := map[key]int{}
	var out []shape
	for i := range waiting {
		c := &waiting[i].c
		if waiting[i].ix != ix || c.profile >= 0 {
			continue
		}
		if c.frac > 0 {
			// A fraction may open any free GPU: as a free GPU sees it, one GPU.
			one := *c
			one.frac, one.n, one.perNode = 0, 1, 0
			c = &one
		}
		k := key{c.n, c.perNode, fmt.Sprint(c.clusters), fmt.Sprint(c.cards)}
		if j, ok := seen[k]; ok {
			out[j].count++
			continue
		}
		seen[k] = len(out)
		out = append(out, shape{c, 1})
	}
	return out
}

// mayUse reports whether r may be placed on node n at all (its card and
// cluster).
func (r *creq) mayUse(n *nodeInfo) bool { return r.mayUseDomain(int(n.cluster), n.card) }

func (r *creq) mayUseDomain(cluster int, card int32) bool {
	return r.allows(cluster) && slices.Contains(r.cards, card)
}

// fitsNode reports whether a node with free of its whole GPUs free, in a
// domain with domainFree free, can take part of r now, as the finder places
// it: gpus_per_node on each node; a gang that fits one node on one; a larger
// one (or one that fits no single node) across any nodes once the domain has
// enough free.
func fitsNode(r *creq, free, whole, domainFree int) bool {
	switch {
	case free == 0:
		return false
	case r.perNode > 0:
		return free >= r.perNode
	case free >= r.n:
		return true
	}
	return domainFree >= r.n
}
