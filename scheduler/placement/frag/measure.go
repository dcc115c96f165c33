package frag

import "slices"

// TaskFrag is F_n(m) of the paper, in milli-GPU: the free GPU capacity on node
// n that a task of shape s cannot use. All of it when s cannot run on n (too
// little CPU or memory, a GPU model it excludes, too few GPUs with enough free,
// or s asks no GPU); otherwise the free capacity on the GPUs that each have less
// free than s needs of one GPU.
func TaskFrag(n *Node, s Shape) int {
	free := 0
	for _, g := range n.GPUFree {
		free += g
	}
	if s.GPUs == 0 || !n.Fits(s) {
		return free
	}
	f := 0
	for _, g := range n.GPUFree {
		if g < s.perGPU() {
			f += g
		}
	}
	return f
}

// NodeFrag is F_n(M) of the paper: the expected TaskFrag of node n over the
// workload's shapes, in milli-GPU.
func NodeFrag(n *Node, w Workload) float64 {
	f := 0.0
	for _, ws := range w {
		f += ws.P * float64(TaskFrag(n, ws.Shape))
	}
	return f
}

// fragCache memoises NodeFrag by node state: nodes of one model with equal
// free CPU, memory and (sorted) free GPUs have equal fragmentation, and a
// cluster of a thousand nodes has few distinct states.
type fragCache struct {
	w Workload
	m map[stateKey]float64
}

type stateKey struct {
	model    string
	cpu, mem int64
	n        int
	gpus     [16]uint16
}

func newFragCache(w Workload) *fragCache { return &fragCache{w: w, m: map[stateKey]float64{}} }

func (c *fragCache) frag(n *Node) float64 {
	if len(n.GPUFree) > 16 {
		return NodeFrag(n, c.w)
	}
	k := stateKey{model: n.Spec.Model, cpu: n.CPUFree, mem: n.MemFree, n: len(n.GPUFree)}
	for i, g := range n.GPUFree {
		k.gpus[i] = uint16(g)
	}
	slices.Sort(k.gpus[:k.n])
	if f, ok := c.m[k]; ok {
		return f
	}
	if len(c.m) > 1<<20 {
		clear(c.m)
	}
	f := NodeFrag(n, c.w)
	c.m[k] = f
	return f
}
