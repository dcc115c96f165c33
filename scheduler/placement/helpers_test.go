package placement

import (
	"fmt"
	"testing"
	"time"
)

var t0 = time.Date(2025, 6, 2, 0, 0, 0, 0, time.UTC)

// testFleet is clusters × nodes × gpus of H100-80GB, racks of rack nodes in
// blocks of two racks; levels rack ⊂ block.
func testFleet(clusters, nodes, gpus, rack int) Fleet {
	f := Fleet{Cards: []Card{{Name: "H100-80GB", MemoryGiB: 80}, {Name: "A100-40GB", MemoryGiB: 40}}, Levels: []string{"rack", "block"}}
	for c := range clusters {
		cl := Cluster{Name: fmt.Sprintf("c%d", c)}
		for n := range nodes {
			cl.Nodes = append(cl.Nodes, Node{Name: fmt.Sprintf("c%d-n%02d", c, n), Card: "H100-80GB", GPUs: gpus,
				Topology: map[string]string{"rack": fmt.Sprintf("r%d", n/rack), "block": fmt.Sprintf("b%d", n/(2*rack))}})
		}
		f.Clusters = append(f.Clusters, cl)
	}
	return f
}

func mustState(t testing.TB, f Fleet) *State {
	t.Helper()
	s, err := NewState(f)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustCompile(t testing.TB, s *State, r Request) Compiled {
	t.Helper()
	c, err := s.Compile(r)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func gpus(n int) Request { return Request{GPUs: n, Cards: []string{"H100-80GB"}} }
