package scheduler

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gpupool/gpupool/schemas"
)

// Validate checks the model. Each line of the error names the failing field by its
// YAML path from the model's root, e.g. "queues[2].quota.H100-80GB.lending_limit:
// 9 is more than the nominal quota 8".
func (m Model) Validate() error {
	m, errs := m.withNodeCapacity()
	errs = append(errs, m.validateNodes()...)
	fail := func(path, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...)))
	}
	// name checks a name by the identifiers' rules (schemas' ident.go): what a
	// job names, a job event carries and a report shows must pass them too.
	name := func(path, v string) {
		if err := schemas.CheckName(path, v); err != nil {
			errs = append(errs, errors.New(strings.TrimPrefix(err.Error(), schemas.ErrInvalidIdentifier.Error()+": ")))
		}
	}
	cards := map[string]bool{}
	if len(m.Cards) == 0 {
		fail("cards", "list at least one card type")
	}
	for i, c := range m.Cards {
		p := fmt.Sprintf("cards[%d]", i)
		name(p+".name", c.Name)
		switch {
		case c.Name == "":
			fail(p+".name", "empty")
		case cards[c.Name]:
			fail(p+".name", "%q is listed twice", c.Name)
		}
		cards[c.Name] = true
		if c.MemoryGiB <= 0 {
			fail(p+".memory_gib", "%d must be positive", c.MemoryGiB)
		}
	}
	checkCounts := func(path string, counts map[string]int) {
		for _, card := range slices.Sorted(maps.Keys(counts)) {
			if !cards[card] {
				fail(path+"."+card, "no such card type (cards lists %v)", m.cardNames())
			} else if counts[card] < 0 {
				fail(path+"."+card, "%d is negative", counts[card])
			}
		}
	}
	physical := map[string]int{}
	clusters := map[string]bool{}
	if len(m.Clusters) == 0 {
		fail("clusters", "list at least one cluster")
	}
	for i, c := range m.Clusters {
		p := fmt.Sprintf("clusters[%d]", i)
		name(p+".name", c.Name)
		if c.Name == "" {
			fail(p+".name", "empty")
		} else if clusters[c.Name] {
			fail(p+".name", "%q is listed twice", c.Name)
		}
		clusters[c.Name] = true
		checkCounts(p+".capacity", c.Capacity)
		for card, n := range c.Capacity {
			physical[card] += n
		}
	}
	pools := map[string]int{}
	poolTotal := map[string]int{}
	if len(m.Pools) == 0 {
		fail("pools", "list at least one pool")
	}
	for i, pl := range m.Pools {
		p := fmt.Sprintf("pools[%d]", i)
		name(p+".name", pl.Name)
		if pl.Name == "" {
			fail(p+".name", "empty")
		} else if _, dup := pools[pl.Name]; dup {
			fail(p+".name", "%q is listed twice", pl.Name)
		}
		pools[pl.Name] = i
		checkCounts(p+".capacity", pl.Capacity)
		for card, n := range pl.Capacity {
			poolTotal[card] += n
		}
		if pl.Protected && pl.Preemptible {
			fail(p+".preemptible", "pool %q is protected, so nothing ever preempts its jobs: set preemptible: false", pl.Name)
		}
		if pl.MaxJobDuration < 0 {
			fail(p+".max_job_duration", "%s is negative", pl.MaxJobDuration)
		}
		if pl.ReclaimGrace < 0 {
			fail(p+".reclaim_grace", "%s is negative", pl.ReclaimGrace)
		}
	}
	for _, card := range slices.Sorted(maps.Keys(poolTotal)) {
		if cards[card] && poolTotal[card] > physical[card] {
			fail("pools", "the pools' capacities of %s add up to %d, more than the clusters' %d", card, poolTotal[card], physical[card])
		}
	}
	classes := map[string]bool{}
	for i, pc := range m.PriorityClasses {
		p := fmt.Sprintf("priority_classes[%d]", i)
		name(p+".name", pc.Name)
		if pc.Name == "" {
			fail(p+".name", "empty")
		} else if classes[pc.Name] {
			fail(p+".name", "%q is listed twice", pc.Name)
		}
		classes[pc.Name] = true
	}
	if m.DefaultPriorityClass != "" && !classes[m.DefaultPriorityClass] {
		fail("default_priority_class", "%q is not one of priority_classes", m.DefaultPriorityClass)
	}
	if m.DefaultPriorityClass == "" && len(m.PriorityClasses) > 0 {
		fail("default_priority_class", "empty; name the class of jobs that name none")
	}
	queues := map[string]bool{}
	nominal := map[string]map[string]int{} // pool → card → Σ nominal
	if len(m.Queues) == 0 {
		fail("queues", "list at least one queue")
	}
	for i, q := range m.Queues {
		p := fmt.Sprintf("queues[%d]", i)
		name(p+".name", q.Name)
		name(p+".team", q.Team)
		name(p+".project", q.Project)
		name(p+".cohort", q.Cohort)
		if q.Name == "" {
			fail(p+".name", "empty")
		} else if queues[q.Name] {
			fail(p+".name", "%q is listed twice", q.Name)
		}
		queues[q.Name] = true
		pi, ok := pools[q.Pool]
		if !ok {
			fail(p+".pool", "%q is not one of pools", q.Pool)
		}
		if q.Weight < 0 || q.Weight != q.Weight {
			fail(p+".weight", "%g must be positive (0 means 1)", q.Weight)
		}
		if q.DefaultPriorityClass != "" && !classes[q.DefaultPriorityClass] {
			fail(p+".default_priority_class", "%q is not one of priority_classes", q.DefaultPriorityClass)
		}
		m.validateQueueClasses(p, q, classes, fail)
		if nominal[q.Pool] == nil {
			nominal[q.Pool] = map[string]int{}
		}
		for _, card := range slices.Sorted(maps.Keys(q.Quota)) {
			qq := q.Quota[card]
			cp := p + ".quota." + card
			if !cards[card] {
				fail(cp, "no such card type (cards lists %v)", m.cardNames())
				continue
			}
			if qq.Nominal < 0 {
				fail(cp+".nominal", "%d is negative", qq.Nominal)
			}
			nominal[q.Pool][card] += qq.Nominal
			if b := qq.BorrowingLimit; b != nil {
				if *b < 0 {
					fail(cp+".borrowing_limit", "%d is negative", *b)
				} else if *b > 0 && ok && !m.Pools[pi].MayBorrow {
					fail(cp+".borrowing_limit", "pool %q may not borrow (may_borrow: false), so a borrowing limit of %d cannot apply", q.Pool, *b)
				}
			}
			if l := qq.LendingLimit; l != nil && (*l < 0 || *l > qq.Nominal) {
				fail(cp+".lending_limit", "%d must be 0..%d (the nominal quota)", *l, qq.Nominal)
			}
		}
	}
	for i, pl := range m.Pools {
		for _, card := range slices.Sorted(maps.Keys(nominal[pl.Name])) {
			if n := nominal[pl.Name][card]; n > pl.Capacity[card] {
				fail(fmt.Sprintf("pools[%d].capacity.%s", i, card), "the nominal quotas of pool %q's queues add up to %d, more than its capacity %d", pl.Name, n, pl.Capacity[card])
			}
		}
	}
	return errors.Join(errs...)
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
