package placement

import (
	"cmp"
	"fmt"
	"slices"
)

// Seen is a node as the collectors report it: the GPUs it sampled recently.
type Seen struct {
	Cluster string `json:"cluster"`
	Node    string `json:"node"`
	// Card is the card type the samples name (the collector's normalised
	// model); GPUs the distinct GPU indices sampled.
	Card string `json:"card"`
	GPUs int    `json:"gpus"`
}

// Discrepancy is one difference between the configured fleet and what the
// collectors report.
type Discrepancy struct {
	// Kind: "unknown" (reported, not configured: never placed on), "missing"
	// (configured, not reported: down, or its collector is), "card" or "gpus"
	// (configured otherwise).
	Kind    string `json:"kind"`
	Cluster string `json:"cluster"`
	Node    string `json:"node"`
	// Configured and Reported say what differs, in words ("8 × H100-80GB").
	Configured string `json:"configured,omitempty"`
	Reported   string `json:"reported,omitempty"`
}

// String is the discrepancy in one line.
func (d Discrepancy) String() string {
	switch d.Kind {
	case "unknown":
		return fmt.Sprintf("node %s/%s reports %s but is not in the model: no job is placed on it", d.Cluster, d.Node, d.Reported)
	case "missing":
		return fmt.Sprintf("node %s/%s (%s in the model) reports no GPU samples", d.Cluster, d.Node, d.Configured)
	}
	return fmt.Sprintf("node %s/%s: the model says %s, its collector reports %s", d.Cluster, d.Node, d.Configured, d.Reported)
}

// Reconcile compares the fleet's nodes with what the collectors reported
// (issue 36: a node that appears in telemetry but not in the configuration is
// reported, not silently used). A node is matched by cluster and name; a
// reported GPU count above the configured one is a discrepancy, one below it
// too (a GPU that stopped reporting is as unusable as a missing node's).
// Cards are compared as named; an empty reported card is not compared. The
// result is ordered by kind, cluster and node.
func (f Fleet) Reconcile(seen []Seen) []Discrepancy {
	type key struct{ cluster, node string }
	conf := map[key]Node{}
	for _, c := range f.Clusters {
		for _, n := range c.Nodes {
			conf[key{c.Name, n.Name}] = n
		}
	}
	var out []Discrepancy
	reported := map[key]bool{}
	for _, s := range seen {
		k := key{s.Cluster, s.Node}
		reported[k] = true
		n, ok := conf[k]
		got := fmt.Sprintf("%d × %s", s.GPUs, cmp.Or(s.Card, "unknown card"))
		switch {
		case !ok:
			out = append(out, Discrepancy{Kind: "unknown", Cluster: s.Cluster, Node: s.Node, Reported: got})
		case s.Card != "" && s.Card != n.Card:
			out = append(out, Discrepancy{Kind: "card", Cluster: s.Cluster, Node: s.Node, Configured: fmt.Sprintf("%d × %s", n.GPUs, n.Card), Reported: got})
		case s.GPUs != n.GPUs:
			out = append(out, Discrepancy{Kind: "gpus", Cluster: s.Cluster, Node: s.Node, Configured: fmt.Sprintf("%d × %s", n.GPUs, n.Card), Reported: got})
		}
	}
	for _, c := range f.Clusters {
		for _, n := range c.Nodes {
			if !reported[key{c.Name, n.Name}] {
				out = append(out, Discrepancy{Kind: "missing", Cluster: c.Name, Node: n.Name, Configured: fmt.Sprintf("%d × %s", n.GPUs, n.Card)})
			}
		}
	}
	slices.SortFunc(out, func(a, b Discrepancy) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.Node, b.Node))
	})
	return out
}
