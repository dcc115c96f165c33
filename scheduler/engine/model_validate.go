package engine

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gpupool/gpupool/schemas"
)

// Validate checks the model, one section after another: nodes and placement,
// cards, clusters, pools, priority classes, queues, and the queues' quotas
// against their pools. Each line of the error names the failing field by its
// YAML path from the model's root, e.g. "queues[2].quota.H100-80GB.lending_limit:
// 9 is more than the nominal quota 8".
func (m Model) Validate() error {
	m, errs := m.withCapacity()
	v := &modelCheck{m: m, errs: append(errs, m.validateNodes()...)}
	for _, section := range []func(){v.cards, v.clusters, v.pools, v.priorityClasses, v.queues, v.poolQuotas} {
		section()
	}
	return errors.Join(v.errs...)
}

// modelCheck is what Validate's sections share: the errors so far, and what
// the sections before have found, for those after.
type modelCheck struct {
	m    Model
	errs []error
	// cardSet, clusterSet, poolIdx (name → index) and classSet are the names
	// the model lists.
	cardSet, clusterSet, classSet map[string]bool
	poolIdx                       map[string]int
	// physical is the clusters' GPUs per card type; nominal the queues'
	// nominal quotas per pool and card type.
	physical map[string]int
	nominal  map[string]map[string]int
}

func (v *modelCheck) fail(path, format string, args ...any) {
	v.errs = append(v.errs, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...)))
}

// name checks a name by the identifiers' rules (schemas' ident.go): what a
// job names, a job event carries and a report shows must pass them too.
func (v *modelCheck) name(path, s string) {
	if err := schemas.CheckName(path, s); err != nil {
		v.errs = append(v.errs, errors.New(strings.TrimPrefix(err.Error(), schemas.ErrInvalidIdentifier.Error()+": ")))
	}
}

// unique checks a list entry's name: set, and not seen before in seen.
func (v *modelCheck) unique(path, s string, seen func(string) bool) {
	switch {
	case s == "":
		v.fail(path, "empty")
	case seen(s):
		v.fail(path, "%q is listed twice", s)
	}
}

// counts checks GPU counts per card type (or MIG instances per MIG resource,
// "<card>/<profile>"): known cards and profiles, none negative.
func (v *modelCheck) counts(path string, counts map[string]int) {
	for _, card := range slices.Sorted(maps.Keys(counts)) {
		if why := v.m.checkResource(card); why != "" {
			v.fail(path+"."+card, "%s", why)
		} else if counts[card] < 0 {
			v.fail(path+"."+card, "%d is negative", counts[card])
		}
	}
}

// cards: cards[i].name, .memory_gib.
func (v *modelCheck) cards() {
	v.cardSet = map[string]bool{}
	if len(v.m.Cards) == 0 {
		v.fail("cards", "list at least one card type")
	}
	for i, c := range v.m.Cards {
		p := fmt.Sprintf("cards[%d]", i)
		v.name(p+".name", c.Name)
		v.unique(p+".name", c.Name, func(s string) bool { return v.cardSet[s] })
		v.cardSet[c.Name] = true
		if c.MemoryGiB <= 0 {
			v.fail(p+".memory_gib", "%d must be positive", c.MemoryGiB)
		}
	}
}

// clusters: clusters[i].name, .capacity (the nodes are the nodes section's).
func (v *modelCheck) clusters() {
	v.clusterSet, v.physical = map[string]bool{}, map[string]int{}
	if len(v.m.Clusters) == 0 {
		v.fail("clusters", "list at least one cluster")
	}
	for i, c := range v.m.Clusters {
		p := fmt.Sprintf("clusters[%d]", i)
		v.name(p+".name", c.Name)
		v.unique(p+".name", c.Name, func(s string) bool { return v.clusterSet[s] })
		v.clusterSet[c.Name] = true
		v.counts(p+".capacity", c.Capacity)
		v.boundaries(p, c)
		for card, n := range c.Capacity {
			v.physical[card] += n
		}
	}
}

// boundaries: clusters[i].teams (names, none twice), .labels.
func (v *modelCheck) boundaries(p string, c Cluster) {
	for i, t := range c.Teams {
		v.name(fmt.Sprintf("%s.teams[%d]", p, i), t)
		if t == "" || slices.Contains(c.Teams[:i], t) {
			v.fail(fmt.Sprintf("%s.teams[%d]", p, i), "%q is empty or listed twice", t)
		}
	}
	if err := schemas.CheckLabels(p+".labels", c.Labels); err != nil {
		v.errs = append(v.errs, errors.New(strings.TrimPrefix(err.Error(), schemas.ErrInvalidIdentifier.Error()+": ")))
	}
}

// pools: pools[i].name, .capacity, .preemptible, .max_job_duration,
// .reclaim_grace; and the pools' capacities against the clusters'.
func (v *modelCheck) pools() {
	v.poolIdx = map[string]int{}
	total := map[string]int{}
	if len(v.m.Pools) == 0 {
		v.fail("pools", "list at least one pool")
	}
	for i, pl := range v.m.Pools {
		p := fmt.Sprintf("pools[%d]", i)
		v.name(p+".name", pl.Name)
		v.unique(p+".name", pl.Name, func(s string) bool { _, dup := v.poolIdx[s]; return dup })
		v.poolIdx[pl.Name] = i
		v.counts(p+".capacity", pl.Capacity)
		for card, n := range pl.Capacity {
			total[card] += n
		}
		if pl.Protected && pl.Preemptible {
			v.fail(p+".preemptible", "pool %q is protected, so nothing ever preempts its jobs: set preemptible: false", pl.Name)
		}
		if pl.MaxJobDuration < 0 {
			v.fail(p+".max_job_duration", "%s is negative", pl.MaxJobDuration)
		}
		if pl.ReclaimGrace < 0 {
			v.fail(p+".reclaim_grace", "%s is negative", pl.ReclaimGrace)
		}
	}
	for _, card := range slices.Sorted(maps.Keys(total)) {
		if v.m.checkResource(card) == "" && total[card] > v.physical[card] {
			v.fail("pools", "the pools' capacities of %s add up to %d, more than the clusters' %d", card, total[card], v.physical[card])
		}
	}
}

// priorityClasses: priority_classes[i].name, default_priority_class.
func (v *modelCheck) priorityClasses() {
	v.classSet = map[string]bool{}
	for i, pc := range v.m.PriorityClasses {
		p := fmt.Sprintf("priority_classes[%d]", i)
		v.name(p+".name", pc.Name)
		v.unique(p+".name", pc.Name, func(s string) bool { return v.classSet[s] })
		v.classSet[pc.Name] = true
	}
	if def := v.m.DefaultPriorityClass; def != "" && !v.classSet[def] {
		v.fail("default_priority_class", "%q is not one of priority_classes", def)
	}
	if v.m.DefaultPriorityClass == "" && len(v.m.PriorityClasses) > 0 {
		v.fail("default_priority_class", "empty; name the class of jobs that name none")
	}
}

// queues: queues[i].name, .team, .project, .cohort, .pool, .weight,
// .default_priority_class, .priority_classes, .quota.
func (v *modelCheck) queues() {
	seen := map[string]bool{}
	v.nominal = map[string]map[string]int{} // pool → card → Σ nominal
	if len(v.m.Queues) == 0 {
		v.fail("queues", "list at least one queue")
	}
	for i, q := range v.m.Queues {
		p := fmt.Sprintf("queues[%d]", i)
		v.name(p+".name", q.Name)
		v.name(p+".team", q.Team)
		v.name(p+".project", q.Project)
		v.name(p+".cohort", q.Cohort)
		v.unique(p+".name", q.Name, func(s string) bool { return seen[s] })
		seen[q.Name] = true
		if _, ok := v.poolIdx[q.Pool]; !ok {
			v.fail(p+".pool", "%q is not one of pools", q.Pool)
		}
		if q.Weight < 0 || q.Weight != q.Weight {
			v.fail(p+".weight", "%g must be positive (0 means 1)", q.Weight)
		}
		if q.DefaultPriorityClass != "" && !v.classSet[q.DefaultPriorityClass] {
			v.fail(p+".default_priority_class", "%q is not one of priority_classes", q.DefaultPriorityClass)
		}
		v.m.validateQueueClasses(p, q, v.classSet, v.fail)
		v.quota(p, q)
	}
}

// quota: queues[i].quota.<card>.nominal, .borrowing_limit, .lending_limit (a
// MIG resource, <card>/<profile>, like a card).
func (v *modelCheck) quota(p string, q Queue) {
	if v.nominal[q.Pool] == nil {
		v.nominal[q.Pool] = map[string]int{}
	}
	pi, ok := v.poolIdx[q.Pool]
	for _, card := range slices.Sorted(maps.Keys(q.Quota)) {
		qq := q.Quota[card]
		cp := p + ".quota." + card
		if why := v.m.checkResource(card); why != "" {
			v.fail(cp, "%s", why)
			continue
		}
		if qq.Nominal < 0 {
			v.fail(cp+".nominal", "%d is negative", qq.Nominal)
		}
		v.nominal[q.Pool][card] += qq.Nominal
		if b := qq.BorrowingLimit; b != nil {
			if *b < 0 {
				v.fail(cp+".borrowing_limit", "%d is negative", *b)
			} else if *b > 0 && ok && !v.m.Pools[pi].MayBorrow {
				v.fail(cp+".borrowing_limit", "pool %q may not borrow (may_borrow: false), so a borrowing limit of %d cannot apply", q.Pool, *b)
			}
		}
		if l := qq.LendingLimit; l != nil && (*l < 0 || *l > qq.Nominal) {
			v.fail(cp+".lending_limit", "%d must be 0..%d (the nominal quota)", *l, qq.Nominal)
		}
	}
}

// poolQuotas: the nominal quotas of each pool's queues within its capacity.
func (v *modelCheck) poolQuotas() {
	for i, pl := range v.m.Pools {
		for _, card := range slices.Sorted(maps.Keys(v.nominal[pl.Name])) {
			if n := v.nominal[pl.Name][card]; n > pl.Capacity[card] {
				v.fail(fmt.Sprintf("pools[%d].capacity.%s", i, card), "the nominal quotas of pool %q's queues add up to %d, more than its capacity %d", pl.Name, n, pl.Capacity[card])
			}
		}
	}
}

func (m Model) cardNames() []string {
	out := make([]string, len(m.Cards))
	for i, c := range m.Cards {
		out[i] = c.Name
	}
	return out
}

// validateQueueClasses checks the classes queue q lets a team name: each one of
// the model's, once, and the queue's default among them (else a team's job that
// names no class could not be submitted).
func (m Model) validateQueueClasses(p string, q Queue, classes map[string]bool, fail func(path, format string, args ...any)) {
	if len(q.PriorityClasses) == 0 {
		return
	}
	seen := map[string]bool{}
	for j, c := range q.PriorityClasses {
		cp := fmt.Sprintf("%s.priority_classes[%d]", p, j)
		switch {
		case !classes[c]:
			fail(cp, "%q is not one of priority_classes (%s)", c, strings.Join(m.priorityClassNames(), ", "))
		case seen[c]:
			fail(cp, "%q is listed twice", c)
		}
		seen[c] = true
	}
	if def := cmp.Or(q.DefaultPriorityClass, m.DefaultPriorityClass); def != "" && classes[def] && !seen[def] {
		fail(p+".priority_classes", "%v leaves out the queue's default class %q, so a team's job that names no class could not be submitted: add it", q.PriorityClasses, def)
	}
}

func (m Model) priorityClassNames() []string {
	out := make([]string, len(m.PriorityClasses))
	for i, pc := range m.PriorityClasses {
		out[i] = pc.Name
	}
	return out
}
