package frag

import (
	"errors"
	"math/rand/v2"
	"testing"
)

func testNodes() []NodeSpec {
	return []NodeSpec{
		{Name: "a", CPUMilli: 32000, MemoryMiB: 65536, GPUs: 8, Model: "G2"},
		{Name: "b", CPUMilli: 16000, MemoryMiB: 32768, GPUs: 2, Model: "T4"},
		{Name: "c", CPUMilli: 8000, MemoryMiB: 16384, GPUs: 4, Model: "V100M16"},
	}
}

func TestPlaceChecksEveryResource(t *testing.T) {
	half := Shape{CPUMilli: 1000, MemoryMiB: 1024, GPUs: 1, GPUMilli: 500}
	cases := []struct {
		name string
		s    Shape
		p    Placement
		ok   bool
	}{
		{"fraction", half, Placement{Node: 1, GPUs: []int{0}}, true},
		{"whole pair", Shape{GPUs: 2, GPUMilli: 1000}, Placement{Node: 1, GPUs: []int{0, 1}}, true},
		{"same GPU twice", Shape{GPUs: 2, GPUMilli: 1000}, Placement{Node: 1, GPUs: []int{0, 0}}, false},
		{"too few GPUs named", Shape{GPUs: 2, GPUMilli: 1000}, Placement{Node: 1, GPUs: []int{0}}, false},
		{"no such GPU", half, Placement{Node: 1, GPUs: []int{2}}, false},
		{"no such node", half, Placement{Node: 3, GPUs: []int{0}}, false},
		{"too much CPU", Shape{CPUMilli: 9000, GPUs: 1, GPUMilli: 100}, Placement{Node: 2, GPUs: []int{0}}, false},
		{"too much memory", Shape{MemoryMiB: 20000, GPUs: 1, GPUMilli: 100}, Placement{Node: 2, GPUs: []int{0}}, false},
		{"model excluded", Shape{GPUs: 1, GPUMilli: 100, Models: "A10|T4"}, Placement{Node: 0, GPUs: []int{0}}, false},
		{"model allowed", Shape{GPUs: 1, GPUMilli: 100, Models: "A10|T4"}, Placement{Node: 1, GPUs: []int{1}}, true},
		{"cpu only", Shape{CPUMilli: 8000}, Placement{Node: 2}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCluster(testNodes())
			err := c.Place(tc.s, tc.p)
			if tc.ok != (err == nil) || (err != nil && !errors.Is(err, ErrNoFit)) {
				t.Fatalf("Place = %v, want ok=%v (or ErrNoFit)", err, tc.ok)
			}
			if err != nil && c.FreeMilli() != 14*MilliGPU {
				t.Errorf("a refused placement changed the cluster: %d milli free", c.FreeMilli())
			}
		})
	}
}

func TestFractionsShareAGPUUpToOne(t *testing.T) {
	c := NewCluster(testNodes())
	s := Shape{GPUs: 1, GPUMilli: 400}
	for i, want := range []bool{true, true, false} {
		err := c.Place(s, Placement{Node: 1, GPUs: []int{0}})
		if (err == nil) != want {
			t.Fatalf("placement %d: %v, want ok=%v", i, err, want)
		}
	}
	if c.Nodes[1].GPUFree[0] != 200 {
		t.Errorf("GPU 0 has %d milli free, want 200", c.Nodes[1].GPUFree[0])
	}
	if err := c.Place(Shape{GPUs: 2, GPUMilli: 1000}, Placement{Node: 1, GPUs: []int{0, 1}}); err == nil {
		t.Error("a whole-GPU task got a GPU that is partly used")
	}
}

// TestPropertyEveryPolicyKeepsGPUsWhole drives every policy with random shapes,
// placing and releasing, and checks after each step that no GPU holds more than
// one GPU's worth, that no CPU or memory is overdrawn, and that whole-GPU tasks
// got GPUs that were wholly free.
func TestPropertyEveryPolicyKeepsGPUsWhole(t *testing.T) {
	tr, err := LoadTrace("testdata", "pods.csv")
	if err != nil {
		t.Fatal(err)
	}
	w := WorkloadOf(tr.Tasks)
	for _, name := range PolicyNames {
		for seed := range uint64(5) {
			t.Run(name, func(t *testing.T) { propertyRun(t, tr, w, name, seed) })
		}
	}
}

func propertyRun(t *testing.T, tr Trace, w Workload, name string, seed uint64) {
	pol, err := NewPolicy(name, w, seed)
	if err != nil {
		t.Fatal(err)
	}
	c := NewCluster(tr.Nodes)
	rng := rand.New(rand.NewPCG(seed, 7))
	type placed struct {
		s Shape
		p Placement
	}
	var live []placed
	for step := range 3000 {
		if len(live) > 0 && rng.IntN(3) == 0 {
			k := rng.IntN(len(live))
			c.Release(live[k].s, live[k].p)
			live = append(live[:k], live[k+1:]...)
			continue
		}
		s := ShapeOf(tr.Tasks[rng.IntN(len(tr.Tasks))])
		p, ok := pol.Choose(c, s)
		if !ok {
			continue
		}
		if !s.Fraction() {
			for _, g := range p.GPUs {
				if c.Nodes[p.Node].GPUFree[g] != MilliGPU {
					t.Fatalf("step %d: whole-GPU task %+v given GPU %d of %s with %d milli free", step, s, g, c.Nodes[p.Node].Spec.Name, c.Nodes[p.Node].GPUFree[g])
				}
			}
		}
		if err := c.Place(s, p); err != nil {
			t.Fatalf("step %d: %s chose a placement that does not fit: %v", step, name, err)
		}
		live = append(live, placed{s, p})
		checkInvariants(t, c, step)
	}
}

func checkInvariants(t *testing.T, c *Cluster, step int) {
	t.Helper()
	for _, n := range c.Nodes {
		for g, f := range n.GPUFree {
			if f < 0 || f > MilliGPU {
				t.Fatalf("step %d: %s GPU %d has %d milli free: its fractions exceed one GPU", step, n.Spec.Name, g, f)
			}
		}
		if n.CPUFree < 0 || n.MemFree < 0 {
			t.Fatalf("step %d: %s overdrawn: cpu %d, memory %d", step, n.Spec.Name, n.CPUFree, n.MemFree)
		}
	}
}

// TestRandomFitIsUniform: over many seeds random-fit takes each of four
// equal nodes about a quarter of the time (it once always took the last node
// that fit), and never a node where the shape does not fit.
func TestRandomFitIsUniform(t *testing.T) {
	var specs []NodeSpec
	for _, name := range []string{"a", "b", "full", "c", "d"} {
		specs = append(specs, NodeSpec{Name: name, CPUMilli: 8000, MemoryMiB: 8192, GPUs: 2, Model: "T4"})
	}
	whole := Shape{GPUs: 2, GPUMilli: MilliGPU}
	const seeds = 800
	picks := map[int]int{}
	for seed := range uint64(seeds) {
		c := NewCluster(specs)
		if err := c.Place(Shape{GPUs: 1, GPUMilli: MilliGPU}, Placement{Node: 2, GPUs: []int{0}}); err != nil {
			t.Fatal(err)
		}
		p, err := NewPolicy(RandomFit, Workload{}, seed)
		if err != nil {
			t.Fatal(err)
		}
		pl, ok := p.Choose(c, whole)
		if !ok {
			t.Fatal("random-fit found no node for a shape that fits four")
		}
		if err := c.Place(whole, pl); err != nil {
			t.Fatalf("seed %d: random-fit chose %+v: %v", seed, pl, err)
		}
		picks[pl.Node]++
	}
	for _, i := range []int{0, 1, 3, 4} {
		if n := picks[i]; n < seeds/4*3/4 || n > seeds/4*5/4 {
			t.Errorf("node %s taken %d times of %d, want about %d: %v", specs[i].Name, n, seeds, seeds/4, picks)
		}
	}
}
