package placement

import (
	"math/rand/v2"
	"testing"
)

// hold places job id on the given GPUs of node.
func hold(t *testing.T, s *State, id, node string, gpus ...int) {
	t.Helper()
	p, err := s.NewPlacement([]NodeAlloc{{Node: node, GPUs: gpus}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Place(id, p, t0); err != nil {
		t.Fatal(err)
	}
}

// TestFragmentation: two 8-GPU nodes with 2 and 4 GPUs free; what is stranded
// depends on the shapes that wait.
func TestFragmentation(t *testing.T) {
	s := mustState(t, testFleet(1, 2, 8, 2))
	hold(t, s, "a", "c0-n00", 0, 1, 2, 3, 4, 5)
	hold(t, s, "b", "c0-n01", 0, 1, 2, 3)
	for _, tc := range []struct {
		name     string
		waiting  []Request
		stranded int
	}{
		{"nothing waits: idle, not stranded", nil, 0},
		{"an 8-GPU job fits neither node", []Request{gpus(8)}, 6},
		{"a 2-GPU job fits both", []Request{gpus(8), gpus(2)}, 0},
		{"a 4-GPU job may use any free GPU", []Request{gpus(4)}, 0},
		{"a 5-GPU job spans both", []Request{gpus(5)}, 0},
		{"4 as 4 per node fits the second", []Request{{GPUs: 4, GPUsPerNode: 4, Cards: []string{"H100-80GB"}}}, 2},
		{"16 as 8 per node fits neither", []Request{{GPUs: 16, GPUsPerNode: 8, Cards: []string{"H100-80GB"}}}, 6},
		{"12 is more than is free", []Request{gpus(12)}, 6},
		{"another card's job does not count", []Request{{GPUs: 1, Cards: []string{"A100-40GB"}}}, 0},
		{"another cluster's job does not count", []Request{{GPUs: 1, Cards: []string{"H100-80GB"}, Cluster: "c9"}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w []Compiled
			for _, r := range tc.waiting {
				c, err := s.ix.compile(r)
				if err != nil {
					continue // a cluster the fleet lacks: not a waiting shape here
				}
				w = append(w, Compiled{r: r, c: c, ix: s.ix})
			}
			got := s.Fragmentation(w)
			if len(got) != 1 {
				t.Fatalf("%d domains, want 1 (H100 in c0): %+v", len(got), got)
			}
			d := got[0]
			if d.Cluster != "c0" || d.Card != "H100-80GB" || d.GPUs != 16 || d.Free != 6 || d.FreeNodes != 0 || d.LargestOnNode != 4 {
				t.Fatalf("domain %+v: want c0 H100-80GB, 16 GPUs, 6 free, no free node, at most 4 free on one node", d)
			}
			if d.Stranded != tc.stranded {
				t.Fatalf("stranded %d, want %d (%+v)", d.Stranded, tc.stranded, d)
			}
		})
	}
	if err := s.Release("b"); err != nil {
		t.Fatal(err)
	}
	d := s.Fragmentation([]Compiled{mustCompile(t, s, Request{GPUs: 8, GPUsPerNode: 8, Cards: []string{"H100-80GB"}})})[0]
	if d.FreeNodes != 1 || d.LargestOnNode != 8 || d.Stranded != 2 {
		t.Fatalf("after a release %+v: want one free node, 8 free on it, 2 stranded on the first node", d)
	}
}

// TestFragmentationAgreesWithPlacement: over random fleets and loads, a
// waiting shape the figure says no node can take is never placed now, and the
// most free on one node places as one node's gang and one more does not, and
// a gang of every free GPU places (it spans nodes).
func TestFragmentationAgreesWithPlacement(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for trial := range 200 {
		nodes := 1 + rng.IntN(6)
		s := mustState(t, testFleet(1, nodes, 8, 2))
		for i := range 20 {
			c, err := s.Compile(gpus(1 + rng.IntN(8)))
			if err != nil {
				t.Fatal(err)
			}
			f := finder{ix: s.ix, v: &s.v, st: s}
			if p, ok := f.find(&c.c); ok {
				if err := s.Place(string(rune('a'+i)), p, t0); err != nil {
					t.Fatal(err)
				}
			}
		}
		size := 1 + rng.IntN(8*nodes)
		c := mustCompile(t, s, gpus(size))
		d := s.Fragmentation([]Compiled{c})[0]
		f := finder{ix: s.ix, v: &s.v, st: s}
		_, placed := f.find(&c.c)
		if d.Stranded == d.Free && d.Free > 0 && placed {
			t.Fatalf("trial %d: a %d-GPU job is placed now, but the figure calls all %d free GPUs stranded", trial, size, d.Free)
		}
		if d.LargestOnNode > 0 {
			one := mustCompile(t, s, Request{GPUs: d.LargestOnNode, GPUsPerNode: d.LargestOnNode, Cards: []string{"H100-80GB"}})
			if _, ok := f.find(&one.c); !ok {
				t.Fatalf("trial %d: %d GPUs on one node do not place (%+v)", trial, d.LargestOnNode, d)
			}
		}
		if d.LargestOnNode < 8 {
			more := mustCompile(t, s, Request{GPUs: d.LargestOnNode + 1, GPUsPerNode: d.LargestOnNode + 1, Cards: []string{"H100-80GB"}})
			if _, ok := f.find(&more.c); ok {
				t.Fatalf("trial %d: %d GPUs place on one node, past the most free on one (%+v)", trial, d.LargestOnNode+1, d)
			}
		}
		if d.Free > 0 && d.Free < d.GPUs {
			all := mustCompile(t, s, gpus(d.Free))
			if _, ok := f.find(&all.c); !ok {
				t.Fatalf("trial %d: a gang of all %d free GPUs does not place (%+v)", trial, d.Free, d)
			}
		}
	}
}
