package placement

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Validate checks the fleet, one validator per section. Each line of the error
// names the field at fault by its path from the fleet's root, e.g.
// "clusters[0].nodes[3].mig[1]: slices use 8 of the GPU's 7".
func (f Fleet) Validate() error {
	v := &validator{}
	cards := f.validateCards(v)
	f.validateLevels(v)
	f.validateClusters(v, cards)
	if len(v.errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w:\n%w", ErrInvalidFleet, errors.Join(v.errs...))
}

type validator struct{ errs []error }

func (v *validator) fail(path, format string, args ...any) {
	v.errs = append(v.errs, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...)))
}

// validateCards checks cards and returns them by name.
func (f Fleet) validateCards(v *validator) map[string]Card {
	cards := map[string]Card{}
	if len(f.Cards) == 0 {
		v.fail("cards", "list at least one card type")
	}
	for i, c := range f.Cards {
		p := fmt.Sprintf("cards[%d]", i)
		switch _, dup := cards[c.Name]; {
		case c.Name == "":
			v.fail(p+".name", "empty")
		case dup:
			v.fail(p+".name", "%q is listed twice", c.Name)
		}
		if c.MemoryGiB <= 0 {
			v.fail(p+".memory_gib", "%d must be positive", c.MemoryGiB)
		}
		cards[c.Name] = c
	}
	return cards
}

func (f Fleet) validateLevels(v *validator) {
	seen := map[string]bool{}
	for i, l := range f.Levels {
		p := fmt.Sprintf("levels[%d]", i)
		switch {
		case l == "":
			v.fail(p, "empty")
		case seen[l]:
			v.fail(p, "%q is listed twice", l)
		}
		seen[l] = true
	}
}

func (f Fleet) validateClusters(v *validator, cards map[string]Card) {
	if len(f.Clusters) == 0 {
		v.fail("clusters", "list at least one cluster")
	}
	clusters := map[string]bool{}
	nodes := map[string]string{} // node name → its path
	for i, c := range f.Clusters {
		p := fmt.Sprintf("clusters[%d]", i)
		switch {
		case c.Name == "":
			v.fail(p+".name", "empty")
		case clusters[c.Name]:
			v.fail(p+".name", "%q is listed twice", c.Name)
		}
		clusters[c.Name] = true
		if len(c.Nodes) == 0 {
			v.fail(p+".nodes", "list at least one node")
		}
		for j, n := range c.Nodes {
			np := fmt.Sprintf("%s.nodes[%d]", p, j)
			if prev, dup := nodes[n.Name]; dup && n.Name != "" {
				v.fail(np+".name", "%q is already %s", n.Name, prev)
			}
			nodes[n.Name] = np
			f.validateNode(v, np, n, cards)
		}
		f.validateNesting(v, p, c)
	}
}

// validateNode checks one node: its card, GPU count, MIG layout and labels.
func (f Fleet) validateNode(v *validator, p string, n Node, cards map[string]Card) {
	if n.Name == "" {
		v.fail(p+".name", "empty")
	}
	card, ok := cards[n.Card]
	if !ok {
		v.fail(p+".card", "no such card type %q (cards lists %v)", n.Card, slices.Sorted(maps.Keys(cards)))
	}
	if n.GPUs <= 0 || n.GPUs > MaxGPUsPerNode {
		v.fail(p+".gpus", "%d must be 1 to %d", n.GPUs, MaxGPUsPerNode)
	}
	if len(n.MIG) > 0 && ok {
		validateMIG(v, p+".mig", n, card)
	}
	for _, l := range f.Levels {
		if n.Topology[l] == "" {
			v.fail(p+".topology."+l, "missing: every node names its domain at each level %v", f.Levels)
		}
	}
	for _, l := range slices.Sorted(maps.Keys(n.Topology)) {
		if !slices.Contains(f.Levels, l) {
			v.fail(p+".topology."+l, "no such level (levels lists %v)", f.Levels)
		}
	}
}

// validateMIG checks a node's MIG layout against its card's profiles.
func validateMIG(v *validator, p string, n Node, card Card) {
	if len(n.MIG) > n.GPUs {
		v.fail(p, "%d GPUs' layouts for a node of %d GPUs", len(n.MIG), n.GPUs)
	}
	if MIGProfiles(card.MemoryGiB) == nil {
		v.fail(p, "card %s (%d GiB) has no MIG profiles known (40 and 80 GiB cards do)", card.Name, card.MemoryGiB)
		return
	}
	total := 0
	for g, layout := range n.MIG {
		used := 0
		for s, name := range layout {
			prof, ok := migProfile(card.MemoryGiB, name)
			if !ok {
				names := []string{}
				for _, q := range MIGProfiles(card.MemoryGiB) {
					names = append(names, q.Name)
				}
				v.fail(fmt.Sprintf("%s[%d][%d]", p, g, s), "no MIG profile %q on %s (it has %v)", name, card.Name, names)
				continue
			}
			used += prof.Slices
		}
		if used > SlicesPerGPU {
			v.fail(fmt.Sprintf("%s[%d]", p, g), "instances use %d compute slices, past the GPU's %d", used, SlicesPerGPU)
		}
		total += len(layout)
	}
	if total > MaxSlicesPerNode {
		v.fail(p, "%d instances, past the %d a node may have", total, MaxSlicesPerNode)
	}
}

// validateNesting checks that a domain of each level lies inside one domain of
// each coarser level.
func (f Fleet) validateNesting(v *validator, p string, c Cluster) {
	for li := 0; li+1 < len(f.Levels); li++ {
		fine, coarse := f.Levels[li], f.Levels[li+1]
		parent := map[string]string{}
		for j, n := range c.Nodes {
			d, up := n.Topology[fine], n.Topology[coarse]
			if d == "" || up == "" {
				continue
			}
			if prev, ok := parent[d]; ok && prev != up {
				v.fail(fmt.Sprintf("%s.nodes[%d].topology.%s", p, j, coarse),
					"%q, but %s domain %q lies in %s %q on other nodes", up, fine, d, coarse, prev)
			}
			parent[d] = up
		}
	}
}
