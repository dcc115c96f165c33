package frag

import (
	"fmt"
	"slices"
	"strings"
)

// Shape is what a task asks for, without its name or times: the unit the
// fragmentation measure and the policies reason about. Models is the task's
// allowed GPU models joined by "|" (empty: any), so that Shape is comparable.
type Shape struct {
	CPUMilli  int64
	MemoryMiB int64
	GPUs      int
	GPUMilli  int
	Models    string
}

// ShapeOf is the task's shape.
func ShapeOf(t Task) Shape {
	return Shape{CPUMilli: t.CPUMilli, MemoryMiB: t.MemoryMiB, GPUs: t.GPUs, GPUMilli: t.GPUMilli, Models: strings.Join(t.Models, "|")}
}

// Fraction reports whether the shape asks for part of one GPU (0 < f < 1).
func (s Shape) Fraction() bool { return s.GPUs == 1 && s.GPUMilli < MilliGPU }

// perGPU is the free milli-GPU each GPU the shape uses must have.
func (s Shape) perGPU() int {
	if s.GPUs == 0 {
		return 0
	}
	return s.GPUMilli
}

// DemandMilli is the shape's GPU demand in milli-GPU.
func (s Shape) DemandMilli() int { return s.GPUs * s.GPUMilli }

// Allows reports whether the shape may run on a GPU of this model.
func (s Shape) Allows(model string) bool {
	if s.Models == "" {
		return true
	}
	for m := range strings.SplitSeq(s.Models, "|") {
		if m == model {
			return true
		}
	}
	return false
}

// Node is a node's spec and what is free on it now. GPUFree holds each GPU's
// free milli-GPU (1000: the whole GPU is free).
type Node struct {
	Spec    NodeSpec
	CPUFree int64
	MemFree int64
	GPUFree []int
	held    bool // reserved by the replay for a waiting gang: nothing else fits
}

// Placement is where a task goes: a node (its index in Cluster.Nodes) and the
// GPUs (indices on the node) it uses; none for a CPU-only task.
type Placement struct {
	Node int
	GPUs []int
}

// Cluster is a set of nodes and the placements made on them.
type Cluster struct {
	Nodes    []Node
	totalGPU int
	maxCPU   int64 // the largest node's CPU, at least 1 (best-fit's scale)
	maxGPUs  int   // the most GPUs on one node, at least 1
}

// NewCluster is an empty cluster of the given nodes.
func NewCluster(specs []NodeSpec) *Cluster {
	c := &Cluster{Nodes: make([]Node, len(specs))}
	for i, s := range specs {
		g := make([]int, s.GPUs)
		for j := range g {
			g[j] = MilliGPU
		}
		c.Nodes[i] = Node{Spec: s, CPUFree: s.CPUMilli, MemFree: s.MemoryMiB, GPUFree: g}
		c.totalGPU += s.GPUs
		c.maxCPU = max(c.maxCPU, s.CPUMilli)
		c.maxGPUs = max(c.maxGPUs, s.GPUs)
	}
	c.maxCPU, c.maxGPUs = max(c.maxCPU, 1), max(c.maxGPUs, 1)
	return c
}

// TotalGPUs is the cluster's GPU count.
func (c *Cluster) TotalGPUs() int { return c.totalGPU }

// FreeMilli is the cluster's unallocated GPU capacity in milli-GPU.
func (c *Cluster) FreeMilli() int {
	f := 0
	for i := range c.Nodes {
		for _, g := range c.Nodes[i].GPUFree {
			f += g
		}
	}
	return f
}

// hosts reports whether the node's CPU, memory and model admit the shape,
// leaving GPUs aside.
func (n *Node) hosts(s Shape) bool {
	if n.held || n.CPUFree < s.CPUMilli || n.MemFree < s.MemoryMiB {
		return false
	}
	return s.GPUs == 0 || (len(n.GPUFree) > 0 && s.Allows(n.Spec.Model))
}

// Fits reports whether the shape can be placed on the node now.
func (n *Node) Fits(s Shape) bool {
	if !n.hosts(s) {
		return false
	}
	need := s.GPUs
	for _, g := range n.GPUFree {
		if need == 0 {
			break
		}
		if g >= s.perGPU() {
			need--
		}
	}
	return need == 0
}

// Place takes the shape's resources at p; it fails with ErrNoFit, changing
// nothing, when they are not free there.
func (c *Cluster) Place(s Shape, p Placement) error {
	if p.Node < 0 || p.Node >= len(c.Nodes) {
		return fmt.Errorf("frag: place on node %d of %d: %w", p.Node, len(c.Nodes), ErrNoFit)
	}
	n := &c.Nodes[p.Node]
	if err := n.check(s, p.GPUs); err != nil {
		return fmt.Errorf("frag: place %+v on %s: %w", s, n.Spec.Name, err)
	}
	n.CPUFree -= s.CPUMilli
	n.MemFree -= s.MemoryMiB
	for _, g := range p.GPUs {
		n.GPUFree[g] -= s.perGPU()
	}
	return nil
}

func (n *Node) check(s Shape, gpus []int) error {
	if !n.hosts(s) {
		return fmt.Errorf("cpu, memory or GPU model: %w", ErrNoFit)
	}
	if len(gpus) != s.GPUs {
		return fmt.Errorf("%d GPUs named, the task asks %d: %w", len(gpus), s.GPUs, ErrNoFit)
	}
	for i, g := range gpus {
		if g < 0 || g >= len(n.GPUFree) || slices.Contains(gpus[:i], g) {
			return fmt.Errorf("GPU %d: no such GPU or named twice: %w", g, ErrNoFit)
		}
		if n.GPUFree[g] < s.perGPU() {
			return fmt.Errorf("GPU %d has %d milli free, the task asks %d: %w", g, n.GPUFree[g], s.perGPU(), ErrNoFit)
		}
	}
	return nil
}

// Release gives back what Place took; p must be a placement made for s.
func (c *Cluster) Release(s Shape, p Placement) {
	n := &c.Nodes[p.Node]
	n.CPUFree += s.CPUMilli
	n.MemFree += s.MemoryMiB
	for _, g := range p.GPUs {
		n.GPUFree[g] += s.perGPU()
	}
}

// candidates are the distinct ways to put the shape on node n: one per distinct
// free amount for a fraction (GPUs with equal free milli give equal outcomes),
// the k fullest-free GPUs for whole GPUs, none for CPU only. Empty when it does
// not fit.
func (n *Node) candidates(s Shape, buf [][]int) [][]int {
	buf = buf[:0]
	if !n.Fits(s) {
		return buf
	}
	if s.GPUs == 0 {
		return append(buf, nil)
	}
	if s.Fraction() {
		for i, g := range n.GPUFree {
			if g >= s.GPUMilli && !seenFree(n.GPUFree[:i], g) {
				buf = append(buf, []int{i})
			}
		}
		return buf
	}
	var gpus []int
	for i, g := range n.GPUFree {
		if g == MilliGPU && len(gpus) < s.GPUs {
			gpus = append(gpus, i)
		}
	}
	return append(buf, gpus)
}

func seenFree(prev []int, g int) bool { return slices.Contains(prev, g) }
