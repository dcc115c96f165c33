package frag

import (
	"math"
	"testing"
)

// node is a G2-like node with the given free milli-GPU per GPU.
func node(cpu int64, free ...int) *Node {
	return &Node{Spec: NodeSpec{Name: "n", CPUMilli: 96000, MemoryMiB: 1 << 20, GPUs: len(free), Model: "G2"}, CPUFree: cpu, MemFree: 1 << 19, GPUFree: free}
}

func TestTaskFragFollowsThePaper(t *testing.T) {
	n := node(8000, 1000, 600, 300, 0)
	cases := []struct {
		name string
		s    Shape
		want int
	}{
		{"half a GPU: the 0.3 GPU is stranded", Shape{CPUMilli: 1000, GPUs: 1, GPUMilli: 500}, 300},
		{"a quarter fits everywhere", Shape{CPUMilli: 1000, GPUs: 1, GPUMilli: 250}, 0},
		{"a whole GPU: the partial GPUs are stranded", Shape{CPUMilli: 1000, GPUs: 1, GPUMilli: 1000}, 900},
		{"two whole GPUs do not fit: all is stranded", Shape{CPUMilli: 1000, GPUs: 2, GPUMilli: 1000}, 1900},
		{"too much CPU: all is stranded", Shape{CPUMilli: 9000, GPUs: 1, GPUMilli: 100}, 1900},
		{"another model: all is stranded", Shape{GPUs: 1, GPUMilli: 100, Models: "T4"}, 1900},
		{"CPU only: no GPU of it is used", Shape{CPUMilli: 1000}, 1900},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := TaskFrag(n, tc.s); got != tc.want {
				t.Errorf("TaskFrag = %d, want %d", got, tc.want)
			}
		})
	}
	w := Workload{{Shape: cases[0].s, P: 0.5}, {Shape: cases[2].s, P: 0.5}}
	if got := NodeFrag(n, w); math.Abs(got-600) > 1e-9 {
		t.Errorf("NodeFrag = %g, want 0.5×300 + 0.5×900 = 600", got)
	}
}

func TestFGDPrefersTheGPUThatStrandsLeast(t *testing.T) {
	// A node with 0.6 and 0.3 free and a workload of 0.3-GPU tasks: a 0.3 task
	// on the 0.6 GPU leaves 0.3 + 0.3, both usable; on the 0.3 GPU it leaves 0.6,
	// usable too. With 0.5-GPU tasks expected the 0.3 GPU is already stranded,
	// and FGD must put a 0.3 task there rather than on the 0.6 GPU.
	specs := []NodeSpec{{Name: "n", CPUMilli: 96000, MemoryMiB: 1 << 20, GPUs: 2, Model: "G2"}}
	w := Workload{{Shape: Shape{GPUs: 1, GPUMilli: 500}, P: 1}}
	for _, name := range []string{FGD, Gpupool} {
		c := NewCluster(specs)
		c.Nodes[0].GPUFree = []int{600, 300}
		pol, err := NewPolicy(name, w, 1)
		if err != nil {
			t.Fatal(err)
		}
		p, ok := pol.Choose(c, Shape{GPUs: 1, GPUMilli: 300})
		if !ok || len(p.GPUs) != 1 || p.GPUs[0] != 1 {
			t.Errorf("%s chose %+v (ok=%v), want GPU 1", name, p, ok)
		}
	}
}

func TestFigureStrandedAndLargestGang(t *testing.T) {
	c := NewCluster([]NodeSpec{
		{Name: "a", CPUMilli: 8000, MemoryMiB: 1024, GPUs: 4, Model: "G2"},
		{Name: "b", CPUMilli: 8000, MemoryMiB: 1024, GPUs: 2, Model: "G2"},
		{Name: "c", CPUMilli: 8000, MemoryMiB: 1024, GPUs: 2, Model: "T4"},
	})
	c.Nodes[0].GPUFree = []int{1000, 1000, 1000, 200}
	c.Nodes[1].GPUFree = []int{1000, 1000}
	c.Nodes[1].CPUFree = 0 // a CPU-only task took it all: its GPUs are stranded
	waiting := []Shape{{CPUMilli: 1000, GPUs: 1, GPUMilli: 500}, {CPUMilli: 1000, GPUs: 2, GPUMilli: 1000}, {CPUMilli: 500}}
	got := Figure(c, waiting)
	want := []ModelFigure{
		{Model: "G2", GPUs: 6, FreeMilli: 5200, StrandedMilli: 200 + 2000, WholeFreeGPUs: 5, LargestGang: 3, FreeNodes: 1},
		{Model: "T4", GPUs: 2, FreeMilli: 2000, StrandedMilli: 0, WholeFreeGPUs: 2, LargestGang: 2, FreeNodes: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("Figure = %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("Figure[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
	if f := Figure(c, nil); f[0].StrandedMilli != 0 {
		t.Errorf("with nothing waiting, %d milli counted stranded", f[0].StrandedMilli)
	}
}
