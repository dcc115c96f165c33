package frag

import (
	"cmp"
	"slices"
)

// ModelFigure is the fragmentation figure of the GPUs of one model: how much is
// free, how much of that no waiting task shape can use, and the largest gang
// that could start now. GPU amounts are in milli-GPU unless named in GPUs.
type ModelFigure struct {
	Model string
	GPUs  int
	// FreeMilli is the unallocated capacity.
	FreeMilli int
	// StrandedMilli is the part of FreeMilli that none of the waiting shapes can
	// use: per node, the least TaskFrag over the waiting shapes that ask GPUs.
	StrandedMilli int
	// WholeFreeGPUs counts GPUs with nothing allocated on them.
	WholeFreeGPUs int
	// LargestGang is the most whole free GPUs on one node whose CPU and memory
	// are not exhausted: the largest one-node gang that could start now.
	LargestGang int
	// FreeNodes counts nodes with every GPU free.
	FreeNodes int
}

// Figure is the fragmentation figure per GPU model, models in name order.
// waiting are the shapes that want to start (a queue, or the expected
// workload's shapes); CPU-only shapes are ignored, and with no GPU shape
// nothing counts as stranded.
func Figure(c *Cluster, waiting []Shape) []ModelFigure {
	var gpuShapes []Shape
	for _, s := range waiting {
		if s.GPUs > 0 && !slices.Contains(gpuShapes, s) {
			gpuShapes = append(gpuShapes, s)
		}
	}
	by := map[string]*ModelFigure{}
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if len(n.GPUFree) == 0 {
			continue
		}
		f := by[n.Spec.Model]
		if f == nil {
			f = &ModelFigure{Model: n.Spec.Model}
			by[n.Spec.Model] = f
		}
		f.add(n, gpuShapes)
	}
	out := make([]ModelFigure, 0, len(by))
	for _, f := range by {
		out = append(out, *f)
	}
	slices.SortFunc(out, func(a, b ModelFigure) int { return cmp.Compare(a.Model, b.Model) })
	return out
}

func (f *ModelFigure) add(n *Node, shapes []Shape) {
	free, whole := 0, 0
	for _, g := range n.GPUFree {
		free += g
		if g == MilliGPU {
			whole++
		}
	}
	f.GPUs += len(n.GPUFree)
	f.FreeMilli += free
	f.WholeFreeGPUs += whole
	if whole == len(n.GPUFree) {
		f.FreeNodes++
	}
	if n.CPUFree > 0 && n.MemFree > 0 {
		f.LargestGang = max(f.LargestGang, whole)
	}
	if len(shapes) == 0 {
		return
	}
	stranded := free
	for _, s := range shapes {
		stranded = min(stranded, TaskFrag(n, s))
	}
	f.StrandedMilli += stranded
}
