package engine

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gpupool/gpupool/scheduler/placement"
)

// Fraction resources (issue 44): a card type's GPU fractions of one sharing
// mode, named "<card>/<mode>" (e.g. "H100-80GB/mps", "L40S/timeslice"), are
// counted in quotas and capacities in thousandths of a GPU (a nominal quota of
// 2000 is two GPUs' worth). A cluster's capacity of one is 1000 × its whole
// GPUs of the card (any whole GPU can become shared) unless its capacity names
// a smaller figure. A queue's fractions count against its fraction quota
// only; the whole GPUs they share count against the cluster's whole GPUs of
// the card, ⌈Σ fractions / 1000⌉ per mode (the GPUs the fractions fill when
// packed), so whole-GPU jobs are never admitted onto them. With nodes, the
// placement decides which GPUs are shared (memory limits may spread fractions
// over more GPUs than that); without, that count is what is held.

// FractionResource names the resource of card's GPU fractions under mode.
func FractionResource(card string, mode placement.Sharing) string { return card + "/" + string(mode) }

// isSharing reports whether s names a sharing mode.
func isSharing(s string) bool { return slices.Contains(placement.Sharings, placement.Sharing(s)) }

// fractionResources lists the fraction resources the model names anywhere,
// per card in cards' order and mode in placement.Sharings' order.
func (m Model) fractionResources(cards []Card) (keys []string, card []int, mode []placement.Sharing) {
	named := m.namedResources()
	for i, c := range cards {
		for _, s := range placement.Sharings {
			if k := FractionResource(c.Name, s); named[k] {
				keys, card, mode = append(keys, k), append(card, i), append(mode, s)
			}
		}
	}
	return keys, card, mode
}

// namedResources is every resource key the model's capacities and quotas name.
func (m Model) namedResources() map[string]bool {
	named := map[string]bool{}
	for _, c := range m.Clusters {
		for k := range c.Capacity {
			named[k] = true
		}
	}
	for _, p := range m.Pools {
		for k := range p.Capacity {
			named[k] = true
		}
	}
	for _, q := range m.Queues {
		for k := range q.Quota {
			named[k] = true
		}
	}
	return named
}

// withCapacity is withNodeCapacity, then each cluster's capacity of every
// fraction resource the model names: 1000 × its whole GPUs of the card, or
// the smaller figure its capacity names.
func (m Model) withCapacity() (Model, []error) {
	m, errs := m.withNodeCapacity()
	keys, _, _ := m.fractionResources(m.Cards)
	if len(keys) == 0 {
		return m, errs
	}
	clusters := slices.Clone(m.Clusters)
	for i, c := range clusters {
		capacity := maps.Clone(c.Capacity)
		if capacity == nil {
			capacity = map[string]int{}
		}
		for _, k := range keys {
			card, _, _ := strings.Cut(k, "/")
			most := placement.FractionUnit * c.Capacity[card]
			n, set := capacity[k]
			switch {
			case !set:
				capacity[k] = most
			case n > most:
				errs = append(errs, fmt.Errorf("clusters[%d].capacity.%s: %d thousandths, more than its %d whole %s GPUs hold (%d)",
					i, k, n, c.Capacity[card], card, most))
			}
		}
		clusters[i].Capacity = capacity
	}
	m.Clusters = clusters
	return m, errs
}

// addFractionResources puts the fraction resources m names after the MIG ones.
func (e *Engine) addFractionResources(m Model) {
	keys, card, mode := m.fractionResources(e.cards[:e.nWhole])
	e.resMode = make([]placement.Sharing, len(e.cards))
	for i, key := range keys {
		base := e.cards[card[i]]
		e.cards = append(e.cards, Card{Name: key, MemoryGiB: base.MemoryGiB, Rank: base.Rank})
		e.resCard, e.resProfile, e.resMode = append(e.resCard, card[i]), append(e.resProfile, ""), append(e.resMode, mode[i])
	}
}

// amount is what a job holds of its resource: GPUs (or MIG instances), or
// thousandths of a GPU for a fraction.
func (j *Job) amount() int {
	if j.Spec.GPUFraction > 0 {
		return j.Spec.GPUFraction
	}
	return j.Spec.GPUs
}

// sharedHeld is the whole GPUs a cluster's fractions of resource k hold:
// ⌈used / 1000⌉ (0 for other resources).
func (e *Engine) sharedHeld(c *clusterState, k int) int {
	if e.resMode[k] == "" {
		return 0
	}
	return (c.used[k] + placement.FractionUnit - 1) / placement.FractionUnit
}

// moveFraction changes cluster c's use of fraction resource k by d
// thousandths, and its whole GPUs of the card by the shared GPUs that opens or
// closes.
func (e *Engine) moveFraction(c *clusterState, k, d int) {
	before := e.sharedHeld(c, k)
	c.used[k] += d
	c.used[e.resCard[k]] += e.sharedHeld(c, k) - before
}

// fractionFits reports whether cluster c has room for j's fraction of resource
// k: thousandths free, and a whole GPU of the card free when the fraction
// needs one more shared GPU.
func (e *Engine) fractionFits(c *clusterState, j *Job, k int) bool {
	if c.capacity[k]-c.used[k] < j.amount() {
		return false
	}
	grow := (c.used[k]+j.amount()+placement.FractionUnit-1)/placement.FractionUnit - e.sharedHeld(c, k)
	card := e.resCard[k]
	return grow == 0 || c.capacity[card]-c.used[card] >= grow
}

// fractionCards is the fraction resources a fraction job may run on: its
// card's (or every card's with at least MinMemoryGiB and the memory limit)
// of its sharing mode, cheapest card first.
func (e *Engine) fractionCards(s *JobSpec) ([]int, error) {
	bad := func(format string, args ...any) ([]int, error) {
		return nil, fmt.Errorf("%w: %s", ErrInvalidJob, fmt.Sprintf(format, args...))
	}
	if s.Card != "" {
		c, ok := e.cardIdx[s.Card]
		if !ok || c >= e.nWhole {
			return bad("card %q does not exist (cards: %s)", s.Card, strings.Join(e.model.cardNames(), ", "))
		}
		if mib := e.cards[c].MemoryGiB * 1024; mib > 0 && s.GPUMemoryMiB > mib {
			return bad("gpu_memory_mib: %d is more than card %s's %d MiB", s.GPUMemoryMiB, s.Card, mib)
		}
	}
	var cards []int
	for k := e.nWhole; k < len(e.cards); k++ {
		base := e.cards[e.resCard[k]]
		mib := base.MemoryGiB * 1024
		if string(e.resMode[k]) == s.Sharing && (s.Card == "" || base.Name == s.Card) &&
			base.MemoryGiB >= s.MinMemoryGiB && (mib == 0 || s.GPUMemoryMiB <= mib) {
			cards = append(cards, k)
		}
	}
	if len(cards) == 0 {
		return bad("sharing: no cluster has %[1]s fractions of %[2]s with %[3]d MiB (the model names no such <card>/%[1]s resource; fraction resources: %[4]s)",
			s.Sharing, cmpOr(s.Card, "any card"), s.GPUMemoryMiB, e.fractionNames())
	}
	return cards, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// fractionNames lists the model's fraction resources ("none" when it has none).
func (e *Engine) fractionNames() string {
	var names []string
	for k := e.nWhole; k < len(e.cards); k++ {
		if e.resMode[k] != "" {
			names = append(names, e.cards[k].Name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// checkFraction checks a fraction job's fields (gpus 0 is taken as 1).
func checkFraction(s *JobSpec) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidJob, fmt.Sprintf(format, args...))
	}
	if s.GPUFraction == 0 {
		switch {
		case s.Sharing != "":
			return bad("sharing: %q without gpu_fraction: a sharing mode is for a fraction of a GPU", s.Sharing)
		case s.GPUMemoryMiB != 0:
			return bad("gpu_memory_mib: %d without gpu_fraction: a memory limit is for a fraction of a GPU", s.GPUMemoryMiB)
		}
		return nil
	}
	if s.GPUs == 0 {
		s.GPUs = 1
	}
	switch {
	case s.GPUFraction < 0 || s.GPUFraction >= placement.FractionUnit:
		return bad("gpu_fraction: %d is outside 1–999 (thousandths of one GPU; ask whole gpus for more)", s.GPUFraction)
	case s.GPUs != 1:
		return bad("gpus: %d with gpu_fraction %d: a fraction is of one GPU; leave gpus out or ask 1", s.GPUs, s.GPUFraction)
	case s.MIGProfile != "":
		return bad("gpu_fraction: set with mig_profile %q: ask a MIG instance or a fraction, not both", s.MIGProfile)
	case s.GPUsPerNode > 1:
		return bad("gpus_per_node: %d with gpu_fraction: a fraction is of one GPU", s.GPUsPerNode)
	case !isSharing(s.Sharing):
		return bad("sharing: %q is neither %q nor %q", s.Sharing, placement.TimeSlice, placement.MPS)
	case s.GPUMemoryMiB < 0:
		return bad("gpu_memory_mib: %d is negative", s.GPUMemoryMiB)
	}
	return nil
}
