package frag

import (
	"cmp"
	"slices"
)

// WeightedShape is one task shape and its share of the expected workload.
type WeightedShape struct {
	Shape Shape
	P     float64
}

// Workload is the expected distribution of task shapes (the paper's target
// workload M): shares sum to 1.
type Workload []WeightedShape

// WorkloadOf counts the tasks' shapes; each share is the shape's count over the
// task count (the paper's popularity). Most popular first; ties by shape.
func WorkloadOf(tasks []Task) Workload {
	return weighted(tasks, func(Shape) float64 { return 1 })
}

// ByGPUDemand reweighs the workload by the GPU capacity each shape asks for
// rather than by task count: the share of arriving GPU demand of that shape.
// CPU-only shapes weigh as a tenth of a GPU so that they still count.
func (w Workload) ByGPUDemand() Workload {
	out := make(Workload, len(w))
	total := 0.0
	for i, ws := range w {
		out[i] = WeightedShape{Shape: ws.Shape, P: ws.P * max(float64(ws.Shape.DemandMilli())/MilliGPU, 0.1)}
		total += out[i].P
	}
	for i := range out {
		out[i].P /= total
	}
	return out
}

func weighted(tasks []Task, w func(Shape) float64) Workload {
	sum := map[Shape]float64{}
	total := 0.0
	for _, t := range tasks {
		s := ShapeOf(t)
		sum[s] += w(s)
		total += w(s)
	}
	out := make(Workload, 0, len(sum))
	for s, v := range sum {
		out = append(out, WeightedShape{Shape: s, P: v / total})
	}
	slices.SortFunc(out, func(a, b WeightedShape) int {
		if c := cmp.Compare(b.P, a.P); c != 0 {
			return c
		}
		return cmpShape(a.Shape, b.Shape)
	})
	return out
}

func cmpShape(a, b Shape) int {
	return cmp.Or(cmp.Compare(a.GPUs, b.GPUs), cmp.Compare(a.GPUMilli, b.GPUMilli), cmp.Compare(a.CPUMilli, b.CPUMilli),
		cmp.Compare(a.MemoryMiB, b.MemoryMiB), cmp.Compare(a.Models, b.Models))
}
