package placement

import (
	"testing"
)

// TestShapeAwareNode: with the expected workload known, a job goes to the
// node whose remaining free GPUs the expected shapes can still use, where
// bin-packing alone would take the fullest node and strand what it leaves;
// with no workload observed, or one that any remainder suits, it bin-packs.
func TestShapeAwareNode(t *testing.T) {
	layout := func(t *testing.T) *State {
		s := mustState(t, testFleet(1, 3, 8, 4))
		// n00: 2 busy (6 free); n01: 3 busy (5 free); n02: full.
		for i, nodeGPUs := range []NodeAlloc{{Node: "c0-n00", GPUs: []int{0, 1}}, {Node: "c0-n01", GPUs: []int{0, 1, 2}},
			{Node: "c0-n02", GPUs: []int{0, 1, 2, 3, 4, 5, 6, 7}}} {
			p, err := s.NewPlacement([]NodeAlloc{nodeGPUs})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Place(string(rune('a'+i)), p, t0); err != nil {
				t.Fatal(err)
			}
		}
		return s
	}
	place := func(s *State) string {
		p, ok, err := s.Find(Request{GPUs: 2, GPUsPerNode: 2, Cards: []string{"H100-80GB"}})
		if err != nil || !ok {
			t.Fatalf("no place for 2 GPUs: %v", err)
		}
		return p.Nodes()[0].Node
	}
	if got := place(layout(t)); got != "c0-n01" {
		t.Fatalf("no workload known: %s, want the fullest node that fits (c0-n01)", got)
	}
	s := layout(t)
	for range 20 {
		s.ObserveShape("H100-80GB", 4, 4) // mostly 4-GPU jobs…
	}
	s.ObserveShape("H100-80GB", 1, 1)
	if got := place(s); got != "c0-n00" {
		t.Fatalf("4-GPU jobs expected: %s, want c0-n00 (6 free leave 4, where c0-n01's 5 would leave 3 that a 4-GPU job cannot use)", got)
	}
	s = layout(t)
	for range 20 {
		s.ObserveShape("H100-80GB", 1, 1) // …or 1-GPU jobs: any remainder is usable
	}
	if got := place(s); got != "c0-n01" {
		t.Fatalf("1-GPU jobs expected: %s, want the fullest node (c0-n01)", got)
	}
	s.ObserveShape("no-such-card", 4, 4) // ignored
	s.ObserveShape("H100-80GB", 4, 0)    // ignored
}

// TestFragGrowth: the growth of node fragmentation for a workload of 4-GPU
// shapes only, worked out by hand (F(x) = x below 4 free, 0 from 4 up).
func TestFragGrowth(t *testing.T) {
	w := make([]float64, 9)
	w[4] = 1
	above := suffix(w)
	for _, c := range []struct {
		free, n int
		want    float64
	}{{5, 2, 3}, {6, 2, 0}, {8, 2, 0}, {2, 2, -2}, {3, 2, -2}, {8, 8, 0}, {4, 1, 3}} {
		if got := fragGrowth(above, c.free, c.n); got != c.want {
			t.Errorf("growth taking %d of %d free: %v, want %v", c.n, c.free, got, c.want)
		}
	}
}
