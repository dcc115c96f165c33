package simrun

import (
	"testing"
	"time"

	fleetsim "github.com/gpupool/gpupool/collector/sim"
)

// TestPlacedGateModel: the fleet's nodes make a valid model whose capacity is
// GateModel's, and a fleet job's shape fits it.
func TestPlacedGateModel(t *testing.T) {
	cfg := fleetsim.DefaultConfig()
	cfg.Start = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	fleet, err := fleetsim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	caps := fleet.Capacity()
	counted, err := GateModel(caps)
	if err != nil {
		t.Fatal(err)
	}
	placed, err := PlacedGateModel(caps)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range placed.Clusters {
		if len(c.Nodes) == 0 {
			t.Fatalf("cluster %s has no nodes", c.Name)
		}
		gpus := 0
		for _, n := range c.Nodes {
			gpus += n.GPUs
		}
		want := 0
		for _, n := range counted.Clusters[i].Capacity {
			want += n
		}
		if gpus != want {
			t.Fatalf("cluster %s: nodes hold %d GPUs, counted capacity %d", c.Name, gpus, want)
		}
	}
	spec := ArrivalSpec(fleetsim.Arrival{GPUs: 16, NodeGPUs: 8})
	if spec.GPUsPerNode != 8 {
		t.Fatalf("16 GPUs on nodes of 8: gpus_per_node %d", spec.GPUsPerNode)
	}
	if spec = ArrivalSpec(fleetsim.Arrival{GPUs: 4, NodeGPUs: 8}); spec.GPUsPerNode != 4 {
		t.Fatalf("4 GPUs on nodes of 8: gpus_per_node %d", spec.GPUsPerNode)
	}
}
