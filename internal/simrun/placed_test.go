package simrun

import (
	"maps"
	"slices"
	"strings"
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
		// The nodes' whole GPUs and MIG instances are the counted capacity,
		// card by card and MIG resource by MIG resource.
		got := map[string]int{}
		for _, n := range c.Nodes {
			got[n.Card] += n.GPUs - len(n.MIG)
			for _, layout := range n.MIG {
				for _, p := range layout {
					got[n.Card+"/"+p]++
				}
			}
		}
		maps.DeleteFunc(got, func(_ string, n int) bool { return n == 0 })
		if want := counted.Clusters[i].Capacity; !maps.Equal(got, want) {
			t.Fatalf("cluster %s: nodes hold %v, counted capacity %v", c.Name, got, want)
		}
		if !slices.ContainsFunc(slices.Collect(maps.Keys(got)), func(k string) bool { return strings.Contains(k, "/") }) {
			t.Fatalf("cluster %s: no MIG instances in %v", c.Name, got)
		}
	}
	// Every pool's quota of a MIG resource is its share of the card's: the
	// queues' quotas add up to the fleet's instances.
	quota := map[string]int{}
	for _, q := range counted.Queues {
		for k, v := range q.Quota {
			quota[k] += v.Nominal
		}
	}
	for _, c := range counted.Clusters {
		for k, n := range c.Capacity {
			quota[k] -= n
		}
	}
	maps.DeleteFunc(quota, func(_ string, n int) bool { return n == 0 })
	if len(quota) != 0 {
		t.Fatalf("queues' quotas minus the fleet's capacity: %v, want none left", quota)
	}
	mig := ArrivalSpec(fleetsim.Arrival{GPUs: 1, MIGProfile: "1g.5gb", NodeGPUs: 8})
	if mig.MIGProfile != "1g.5gb" || mig.GPUs != 1 || mig.GPUsPerNode != 0 {
		t.Fatalf("a MIG arrival's spec: %+v", mig)
	}
	spec := ArrivalSpec(fleetsim.Arrival{GPUs: 16, NodeGPUs: 8})
	if spec.GPUsPerNode != 8 {
		t.Fatalf("16 GPUs on nodes of 8: gpus_per_node %d", spec.GPUsPerNode)
	}
	if spec = ArrivalSpec(fleetsim.Arrival{GPUs: 4, NodeGPUs: 8}); spec.GPUsPerNode != 4 {
		t.Fatalf("4 GPUs on nodes of 8: gpus_per_node %d", spec.GPUsPerNode)
	}
}
