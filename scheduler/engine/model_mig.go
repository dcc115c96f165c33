package engine

import (
	"fmt"
	"strings"

	"github.com/gpupool/gpupool/scheduler/placement"
)

// MIG resources: a card type's instances of one MIG profile, named
// "<card>/<profile>" (e.g. "A100-80GB/1g.10gb"), are counted in quotas and
// capacities like a card type. The profiles are scheduler/placement's: 1g.10gb …
// 7g.80gb on 80 GiB cards, 1g.5gb … 7g.40gb on 40 GiB cards.

// MIGResource names the resource of card's instances of profile.
func MIGResource(card, profile string) string { return card + "/" + profile }

// card returns the model's card type name.
func (m Model) card(name string) (Card, bool) {
	for _, c := range m.Cards {
		if c.Name == name {
			return c, true
		}
	}
	return Card{}, false
}

// checkResource says what is wrong with key as a quota or capacity key: a card
// type, or a card type's MIG profile ("" when it is one).
func (m Model) checkResource(key string) string {
	name, profile, mig := strings.Cut(key, "/")
	c, ok := m.card(name)
	switch {
	case !ok && mig:
		return fmt.Sprintf("no such card type %q (cards lists %v; a MIG resource is <card>/<profile>, e.g. A100-80GB/1g.10gb; a fraction resource <card>/timeslice or <card>/mps)", name, m.cardNames())
	case !ok:
		return fmt.Sprintf("no such card type (cards lists %v)", m.cardNames())
	case !mig || isSharing(profile):
		return ""
	}
	return migProfileProblem(c, profile)
}

// migProfileProblem says why profile is not one of card c's MIG profiles ("":
// it is).
func migProfileProblem(c Card, profile string) string {
	profiles := placement.MIGProfiles(c.MemoryGiB)
	names := make([]string, len(profiles))
	for i, p := range profiles {
		if p.Name == profile {
			return ""
		}
		names[i] = p.Name
	}
	if len(profiles) == 0 {
		return fmt.Sprintf("card %s (%d GiB) has no MIG profiles (only 40 and 80 GiB cards are partitioned)", c.Name, c.MemoryGiB)
	}
	return fmt.Sprintf("%q is not a MIG profile of %s (%d GiB: %s)", profile, c.Name, c.MemoryGiB, strings.Join(names, ", "))
}

// migResources lists the MIG resources the model names anywhere (clusters',
// pools' capacities, queues' quotas) that are valid, per card in cards' order
// and profile in placement's order: the engine's resources after its cards.
func (m Model) migResources(cards []Card) (keys []string, card []int, profile []string) {
	named := m.namedResources()
	for i, c := range cards {
		for _, p := range placement.MIGProfiles(c.MemoryGiB) {
			if k := MIGResource(c.Name, p.Name); named[k] {
				keys, card, profile = append(keys, k), append(card, i), append(profile, p.Name)
			}
		}
	}
	return keys, card, profile
}
