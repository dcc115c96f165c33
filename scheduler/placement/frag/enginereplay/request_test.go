package enginereplay

import (
	"slices"
	"testing"

	"github.com/gpupool/gpupool/scheduler/placement"
	"github.com/gpupool/gpupool/scheduler/placement/frag"
)

func TestRequestOf(t *testing.T) {
	cards := []string{"P100", "T4", "G2"}
	cases := []struct {
		name  string
		shape frag.Shape
		want  placement.Request
		ok    bool
	}{
		{"one whole GPU", frag.Shape{CPUMilli: 4000, MemoryMiB: 8192, GPUs: 1, GPUMilli: 1000},
			placement.Request{GPUs: 1, GPUsPerNode: 1, Cards: cards, Cluster: ClusterName}, true},
		{"a gang of 8 on one node", frag.Shape{GPUs: 8, GPUMilli: 1000},
			placement.Request{GPUs: 8, GPUsPerNode: 8, Cards: cards, Cluster: ClusterName}, true},
		{"a fraction, no memory limit", frag.Shape{GPUs: 1, GPUMilli: 460},
			placement.Request{GPUs: 1, Fraction: 460, Sharing: placement.MPS, Cards: cards, Cluster: ClusterName}, true},
		{"models: those of the fleet, in the fleet's order", frag.Shape{GPUs: 2, GPUMilli: 1000, Models: "G2|A10|P100"},
			placement.Request{GPUs: 2, GPUsPerNode: 2, Cards: []string{"P100", "G2"}, Cluster: ClusterName}, true},
		{"a fraction of one model", frag.Shape{GPUs: 1, GPUMilli: 50, Models: "T4"},
			placement.Request{GPUs: 1, Fraction: 50, Sharing: placement.MPS, Cards: []string{"T4"}, Cluster: ClusterName}, true},
		{"models the fleet lacks", frag.Shape{GPUs: 1, GPUMilli: 1000, Models: "A10"}, placement.Request{}, false},
		{"CPU only", frag.Shape{CPUMilli: 8000, MemoryMiB: 4096}, placement.Request{}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := RequestOf(c.shape, cards, placement.MPS)
			if ok != c.ok || !equalRequest(got, c.want) {
				t.Fatalf("RequestOf(%+v) = %+v, %v; want %+v, %v", c.shape, got, ok, c.want, c.ok)
			}
		})
	}
}

func equalRequest(a, b placement.Request) bool {
	ca, cb := a.Cards, b.Cards
	a.Cards, b.Cards = nil, nil
	return slices.Equal(ca, cb) && a.GPUs == b.GPUs && a.GPUsPerNode == b.GPUsPerNode && a.Fraction == b.Fraction &&
		a.Sharing == b.Sharing && a.MemoryMiB == b.MemoryMiB && a.Cluster == b.Cluster && len(a.Clusters) == 0 && len(b.Clusters) == 0 &&
		a.MIGProfile == b.MIGProfile && a.Level == b.Level && !a.Spread && !a.FirstFit
}

func TestFleetAndCardOrders(t *testing.T) {
	nodes := []frag.NodeSpec{
		{Name: "g2-0", GPUs: 8, Model: "G2"},
		{Name: "cpu-0", GPUs: 0},
		{Name: "t4-0", GPUs: 2, Model: "T4"},
		{Name: "g2-1", GPUs: 8, Model: "G2"},
		{Name: "v100-0", GPUs: 8, Model: "V100M16"},
		{Name: "t4-1", GPUs: 4, Model: "T4"},
	}
	f, err := Fleet(nodes, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := cardNames(f); !slices.Equal(got, []string{"G2", "T4", "V100M16"}) {
		t.Errorf("cards %v, want the nodes' order G2, T4, V100M16", got)
	}
	if n := len(f.Clusters[0].Nodes); len(f.Clusters) != 1 || n != 5 {
		t.Errorf("%d clusters, %d nodes; want one cluster of the 5 GPU nodes", len(f.Clusters), n)
	}
	by := CardsBySize(nodes)
	if !slices.Equal(by, []string{"T4", "V100M16", "G2"}) {
		t.Errorf("CardsBySize = %v, want T4 (4 GPUs at most), V100M16 (8, 8 in all), G2 (8, 16 in all)", by)
	}
	f, err = Fleet(nodes, by)
	if err != nil || !slices.Equal(cardNames(f), by) {
		t.Errorf("Fleet with an order: cards %v (err %v), want %v", cardNames(f), err, by)
	}
}
