package engine

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Who may name which priority class. A class's value orders admission and lets
// a job preempt lower ones, so a class is a claim on other teams' GPUs: a team
// may name only the classes its queue allows it (Queue.PriorityClasses, by
// default every class up to the queue's default), as Kueue scopes a
// WorkloadPriorityClass and a ResourceQuota a PriorityClass. Operators and
// admins may name any class; the API applies the rule to team callers
// (CheckTeamPriority), and jobs the scheduler queues itself keep theirs.

// TeamPriorityClasses returns the classes a team may name for a job in queue,
// highest value first: the queue's priority_classes, else every class whose
// value is at most that of the queue's default class. ok is false when the
// model has no such queue.
func (m Model) TeamPriorityClasses(queue string) (classes []string, ok bool) {
	i := slices.IndexFunc(m.Queues, func(q Queue) bool { return q.Name == queue })
	if i < 0 {
		return nil, false
	}
	q := m.Queues[i]
	allowed := func(pc PriorityClass) bool { return slices.Contains(q.PriorityClasses, pc.Name) }
	if len(q.PriorityClasses) == 0 {
		def, found := m.priorityClass(cmp.Or(q.DefaultPriorityClass, m.DefaultPriorityClass))
		if !found {
			return nil, true
		}
		allowed = func(pc PriorityClass) bool { return pc.Value <= def.Value }
	}
	var pcs []PriorityClass
	for _, pc := range m.PriorityClasses {
		if allowed(pc) {
			pcs = append(pcs, pc)
		}
	}
	slices.SortStableFunc(pcs, func(a, b PriorityClass) int { return cmp.Compare(b.Value, a.Value) })
	for _, pc := range pcs {
		classes = append(classes, pc.Name)
	}
	return classes, true
}

// CheckTeamPriority checks that a team may name class ("": the queue's default)
// for a job in queue. The error wraps ErrPriorityNotAllowed and lists the
// classes the team may name there; a queue or class the model does not have
// wraps ErrUnknownQueue or ErrInvalidJob, as Submit's would.
func (m Model) CheckTeamPriority(queue, class string) error {
	classes, ok := m.TeamPriorityClasses(queue)
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownQueue, queue)
	}
	if class == "" {
		return nil // the queue's default, which validation keeps among its classes
	}
	pc, found := m.priorityClass(class)
	if !found {
		return fmt.Errorf("%w: priority class %q does not exist (classes: %s)", ErrInvalidJob, class, strings.Join(m.priorityClassNames(), ", "))
	}
	if slices.Contains(classes, class) {
		return nil
	}
	why := "its priority_classes"
	i := slices.IndexFunc(m.Queues, func(q Queue) bool { return q.Name == queue })
	if len(m.Queues[i].PriorityClasses) == 0 {
		why = "the classes up to its default, " + cmp.Or(m.Queues[i].DefaultPriorityClass, m.DefaultPriorityClass)
	}
	return fmt.Errorf("%w: %s (value %d) in queue %s; a team may use %s there (%s); an operator or admin may submit at a higher class, or allow it in the queue's priority_classes",
		ErrPriorityNotAllowed, pc.Name, pc.Value, queue, strings.Join(classes, ", "), why)
}

// priorityClass is the class named name.
func (m Model) priorityClass(name string) (PriorityClass, bool) {
	i := slices.IndexFunc(m.PriorityClasses, func(pc PriorityClass) bool { return pc.Name == name })
	if i < 0 {
		return PriorityClass{}, false
	}
	return m.PriorityClasses[i], true
}
