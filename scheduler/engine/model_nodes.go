package engine

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gpupool/gpupool/scheduler/placement"
)

// NodeGroup is one node of a cluster, or Count alike nodes (a rack of one
// model): the scheduler places jobs on their GPUs (scheduler/placement).
type NodeGroup struct {
	// Name is the node's name (a hostname, unique in the model); with Count,
	// the names' prefix: Name followed by 0 … Count-1, zero-padded to one width
	// ("gpu-a" with count 16: gpu-a00 … gpu-a15).
	Name string `yaml:"name" json:"name"`
	// Count, when set, makes the entry that many nodes.
	Count int    `yaml:"count,omitempty" json:"count,omitempty"`
	Card  string `yaml:"card" json:"card"`
	GPUs  int    `yaml:"gpus" json:"gpus"`
	// MIG is the MIG layout per GPU index (placement.Node.MIG); a partitioned
	// GPU is not counted in the cluster's capacity of whole GPUs.
	MIG [][]string `yaml:"mig,omitempty" json:"mig,omitempty"`
	// Topology is the node's domain at each of the model's topology levels,
	// e.g. {"nvlink": "nvl3", "rack": "r12"}.
	Topology map[string]string `yaml:"topology,omitempty" json:"topology,omitempty"`
}

// nodes expands the group.
func (g NodeGroup) nodes() []placement.Node {
	n := placement.Node{Name: g.Name, Card: g.Card, GPUs: g.GPUs, MIG: g.MIG, Topology: g.Topology}
	if g.Count <= 0 {
		return []placement.Node{n}
	}
	w := len(strconv.Itoa(g.Count - 1))
	out := make([]placement.Node, g.Count)
	for i := range out {
		out[i] = n
		out[i].Name = fmt.Sprintf("%s%0*d", g.Name, w, i)
	}
	return out
}

// wholeGPUs is a node's GPUs given whole (not partitioned by MIG).
func wholeGPUs(n placement.Node) int {
	w := n.GPUs
	for g, inst := range n.MIG {
		if g < n.GPUs && len(inst) > 0 {
			w--
		}
	}
	return w
}

// placed reports whether the model's clusters list their nodes: then the engine
// places jobs on them.
func (m Model) placed() bool {
	for _, c := range m.Clusters {
		if len(c.Nodes) > 0 {
			return true
		}
	}
	return false
}

// Fleet is the model's nodes as scheduler/placement takes them (its clusters
// that list nodes).
func (m Model) Fleet() placement.Fleet {
	f := placement.Fleet{Levels: m.TopologyLevels}
	for _, c := range m.Cards {
		f.Cards = append(f.Cards, placement.Card{Name: c.Name, MemoryGiB: c.MemoryGiB})
	}
	for _, c := range m.Clusters {
		if len(c.Nodes) == 0 {
			continue
		}
		pc := placement.Cluster{Name: c.Name}
		for _, g := range c.Nodes {
			pc.Nodes = append(pc.Nodes, g.nodes()...)
		}
		f.Clusters = append(f.Clusters, pc)
	}
	return f
}

// nodeCapacity is each cluster's whole GPUs per card and MIG instances per
// MIG resource (card/profile), from its nodes. An instance of a profile its
// card does not have is left out (the nodes' validation names it).
func (m Model) nodeCapacity(c Cluster) map[string]int {
	out := map[string]int{}
	for _, g := range c.Nodes {
		for _, n := range g.nodes() {
			out[n.Card] += wholeGPUs(n)
			for gpu, inst := range n.MIG {
				for _, p := range inst {
					if k := MIGResource(n.Card, p); gpu < n.GPUs && m.checkResource(k) == "" {
						out[k]++
					}
				}
			}
		}
	}
	return out
}

// withNodeCapacity returns m with the capacity of every cluster that lists
// nodes taken from them (a copy: m's clusters are not changed), and what
// disagrees: a capacity written beside the nodes must be theirs.
func (m Model) withNodeCapacity() (Model, []error) {
	if !m.placed() {
		return m, nil
	}
	var errs []error
	m.Clusters = slices.Clone(m.Clusters)
	for i, c := range m.Clusters {
		if len(c.Nodes) == 0 {
			errs = append(errs, fmt.Errorf("clusters[%d].nodes: cluster %s lists no nodes, but others do: list the nodes of every cluster or of none", i, c.Name))
			continue
		}
		fromNodes := m.nodeCapacity(c)
		for _, card := range slices.Sorted(maps.Keys(c.Capacity)) {
			what := "whole " + card + " GPUs"
			if name, profile, mig := strings.Cut(card, "/"); mig {
				what = name + " MIG instances of " + profile
			}
			if _, mode, _ := strings.Cut(card, "/"); isSharing(mode) {
				continue // fractions: withCapacity
			}
			if n := c.Capacity[card]; n != fromNodes[card] && m.checkResource(card) == "" {
				errs = append(errs, fmt.Errorf("clusters[%d].capacity.%s: %d, but the cluster's nodes have %d %s (leave capacity out: the nodes give it)",
					i, card, n, fromNodes[card], what))
			}
		}
		for card, n := range c.Capacity {
			if _, mode, _ := strings.Cut(card, "/"); m.checkResource(card) != "" || isSharing(mode) {
				fromNodes[card] = n // kept for the capacity section to name, or for withCapacity
			}
		}
		m.Clusters[i].Capacity = fromNodes
	}
	return m, errs
}

// validateNodes checks the nodes through scheduler/placement's validators.
func (m Model) validateNodes() []error {
	if !m.placed() {
		if len(m.TopologyLevels) > 0 {
			return []error{errors.New("topology_levels: set, but no cluster lists nodes")}
		}
		return nil
	}
	var errs []error
	if err := m.Fleet().Validate(); err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			line = strings.TrimPrefix(line, placement.ErrInvalidFleet.Error()+": ")
			if line == "" || line == placement.ErrInvalidFleet.Error()+":" || line == placement.ErrInvalidFleet.Error() {
				continue
			}
			errs = append(errs, errors.New("nodes: "+line))
		}
	}
	if err := m.Placement.Validate(); err != nil && m.Placement != (placement.PlanConfig{}) {
		errs = append(errs, fmt.Errorf("placement.%w", err))
	}
	return errs
}
