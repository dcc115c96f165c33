package placement

import (
	"errors"
	"testing"
)

func TestFind(t *testing.T) {
	s := mustState(t, testFleet(1, 8, 8, 2)) // racks of 2 nodes, blocks of 4
	place := func(id string, r Request) Placement {
		t.Helper()
		p, ok, err := s.Find(r)
		if err != nil || !ok {
			t.Fatalf("%s: find %+v: ok %v err %v", id, r, ok, err)
		}
		if err := s.Place(id, p, t0); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// Bin-pack: small jobs share the first node.
	a := place("a", gpus(3))
	b := place("b", gpus(4))
	if a.Nodes()[0].Node != b.Nodes()[0].Node {
		t.Errorf("bin-pack put b on %s, a on %s", b, a)
	}
	// A 1-GPU job takes the last GPU of that node, not a fresh one.
	c := place("c", gpus(1))
	if c.Nodes()[0].Node != a.Nodes()[0].Node {
		t.Errorf("1 GPU went to %s, want the used node %s", c, a.Nodes()[0].Node)
	}
	// Spread takes the emptiest nodes, one GPU each.
	sp := place("sp", Request{GPUs: 3, Cards: []string{"H100-80GB"}, Spread: true})
	if len(sp.Nodes()) != 3 {
		t.Errorf("spread: %s, want 3 nodes", sp)
	}
	// Gang of 16, 8 per node, rack required: both nodes of one rack.
	g := place("g", Request{GPUs: 16, GPUsPerNode: 8, Cards: []string{"H100-80GB"}, Level: "rack"})
	ns := g.Nodes()
	if len(ns) != 2 || len(ns[0].GPUs) != 8 || rackOf(s, ns[0].Node) != rackOf(s, ns[1].Node) {
		t.Errorf("gang: %s", g)
	}
	// Nothing given twice.
	if err := s.Place("again", g, t0); !errors.Is(err, ErrTaken) {
		t.Errorf("placing taken GPUs: %v", err)
	}
	if err := s.check(); err != nil {
		t.Fatal(err)
	}
	// 64 GPUs never fit 8 nodes with 25 used.
	if _, ok, _ := s.Find(gpus(64)); ok {
		t.Error("64 GPUs found on a used fleet of 64")
	}
	if err := s.Check(gpus(65)); !errors.Is(err, ErrNeverFits) {
		t.Errorf("65 GPUs: %v", err)
	}
	if _, _, err := s.Find(Request{GPUs: 2, Cards: []string{"H100-80GB"}, Level: "row"}); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("unknown level: %v", err)
	}
}

func rackOf(s *State, node string) string {
	return s.ix.fleet.Clusters[0].Nodes[s.ix.nodeIdx[node]].Topology["rack"]
}

func TestFindMIG(t *testing.T) {
	f := testFleet(1, 2, 8, 2)
	f.Clusters[0].Nodes[1].MIG = [][]string{{"3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"}, {"1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb"}}
	s := mustState(t, f)
	r := Request{GPUs: 8, MIGProfile: "1g.10gb", Cards: []string{"H100-80GB"}}
	p, ok, err := s.Find(r)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if err := s.Place("m", p, t0); err != nil {
		t.Fatal(err)
	}
	if got := p.Count(); got != 8 {
		t.Errorf("placed %d slices", got)
	}
	for _, sl := range p.Nodes()[0].Slices {
		if sl.Profile != "1g.10gb" {
			t.Errorf("slice %+v", sl)
		}
	}
	if _, ok, _ := s.Find(Request{GPUs: 1, MIGProfile: "1g.10gb", Cards: []string{"H100-80GB"}}); !ok {
		t.Error("the 9th 1g.10gb instance not found")
	}
	if _, ok, _ := s.Find(Request{GPUs: 1, MIGProfile: "3g.40gb", Cards: []string{"H100-80GB"}}); !ok {
		t.Error("3g.40gb not found")
	}
	// 14 whole GPUs: the MIG node has 6 whole ones.
	if _, ok, _ := s.Find(gpus(14)); !ok {
		t.Error("14 whole GPUs (8 + 6) not found")
	}
	if _, ok, _ := s.Find(gpus(15)); ok {
		t.Error("15 whole GPUs found: partitioned GPUs given whole")
	}
	if err := s.check(); err != nil {
		t.Fatal(err)
	}
}
