package enginereplay

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/gpupool/gpupool/scheduler/placement"
	"github.com/gpupool/gpupool/scheduler/placement/frag"
)

// ClusterName is the one cluster the replay's fleet has: the trace is one
// cluster.
const ClusterName = "alibaba"

// cardMemoryGiB is the memory of the trace's GPU models that its README names;
// G2 and G3 are undisclosed and get defaultMemoryGiB. The memory never binds:
// a fraction asks no memory limit, so it holds its share of the card's memory
// (placement.Request.MemoryMiB 0), and shares of one GPU sum to at most 1000.
var cardMemoryGiB = map[string]int{"P100": 16, "T4": 16, "V100M16": 16, "V100M32": 32, "A10": 24}

const defaultMemoryGiB = 16

// Fleet is the placement fleet of the trace's nodes: one cluster, one card
// type per GPU model, cards in the order given (each model once), then any
// model of the nodes that cards leaves out, in the order the nodes first
// name it. Nodes without GPUs are left out: the placement package places GPUs
// only.
func Fleet(nodes []frag.NodeSpec, cards []string) (placement.Fleet, error) {
	order := slices.Clone(cards)
	cl := placement.Cluster{Name: ClusterName}
	for _, n := range nodes {
		if n.GPUs == 0 {
			continue
		}
		if !slices.Contains(order, n.Model) {
			order = append(order, n.Model)
		}
		cl.Nodes = append(cl.Nodes, placement.Node{Name: n.Name, Card: n.Model, GPUs: n.GPUs})
	}
	f := placement.Fleet{Clusters: []placement.Cluster{cl}}
	for _, m := range order {
		f.Cards = append(f.Cards, placement.Card{Name: m, MemoryGiB: cmp.Or(cardMemoryGiB[m], defaultMemoryGiB)})
	}
	if err := f.Validate(); err != nil {
		return placement.Fleet{}, fmt.Errorf("enginereplay: fleet of the trace's nodes: %w", err)
	}
	return f, nil
}

// RequestOf is what a task of shape s asks the placement package, on a fleet
// whose card types are cards (in the order they are tried):
//   - k whole GPUs (gpu_milli 1000): a gang of k GPUs all on one node
//     (GPUsPerNode k), as the trace's tasks are pods of one node;
//   - a fraction of one GPU (gpu_milli below 1000): Fraction gpu_milli
//     thousandths under sharing, with no memory limit (the trace names none:
//     the share holds its fraction of the card's memory);
//   - the GPU models the task allows (gpu_spec): the cards, in the fleet's
//     order, that it names; none named: every card.
//
// ok is false for a task that asks no GPU (placement places GPUs only) or
// whose models are none of the fleet's.
func RequestOf(s frag.Shape, cards []string, sharing placement.Sharing) (placement.Request, bool) {
	if s.GPUs == 0 {
		return placement.Request{}, false
	}
	r := placement.Request{GPUs: s.GPUs, Cluster: ClusterName}
	for _, c := range cards {
		if s.Allows(c) {
			r.Cards = append(r.Cards, c)
		}
	}
	if len(r.Cards) == 0 {
		return placement.Request{}, false
	}
	if s.Fraction() {
		r.Fraction, r.Sharing = s.GPUMilli, sharing
		return r, true
	}
	r.GPUsPerNode = s.GPUs
	return r, true
}

// cardNames are the fleet's card types, in order.
func cardNames(f placement.Fleet) []string {
	out := make([]string, len(f.Cards))
	for i, c := range f.Cards {
		out[i] = c.Name
	}
	return out
}

// CardsBySize orders the GPU models of nodes (CardsSmallFirst) so that a task
// that allows any tries the models of small nodes first: by the most GPUs one
// node of the model has, then by the model's GPUs in all, then by name. The
// whole nodes of large models then stay free longest for the gangs only they
// can hold.
func CardsBySize(nodes []frag.NodeSpec) []string {
	most, total := map[string]int{}, map[string]int{}
	var out []string
	for _, n := range nodes {
		if n.GPUs == 0 {
			continue
		}
		if _, ok := total[n.Model]; !ok {
			out = append(out, n.Model)
		}
		most[n.Model] = max(most[n.Model], n.GPUs)
		total[n.Model] += n.GPUs
	}
	slices.SortFunc(out, func(a, b string) int {
		return cmp.Or(cmp.Compare(most[a], most[b]), cmp.Compare(total[a], total[b]), cmp.Compare(a, b))
	})
	return out
}
