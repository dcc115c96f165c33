package scheduler

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// Policy actions, in the order of how much they disturb.
const (
	// ActionRecommend records a recommendation (wrong card: a smaller one) and
	// changes nothing.
	ActionRecommend = "recommend"
	// ActionNotify tells the job's owner.
	ActionNotify = "notify"
	// ActionReclaim stops the job and requeues it with its place kept.
	ActionReclaim = "reclaim"
	// ActionCancel stops the job for good.
	ActionCancel = "cancel"
	// ActionKill ends one process (a zombie's PID).
	ActionKill = "kill"
)

var policyActions = []string{ActionRecommend, ActionNotify, ActionReclaim, ActionCancel, ActionKill}

// disruptive reports whether an action takes GPUs from someone; only these count
// against a policy's rate limit.
func disruptive(action string) bool {
	return action == ActionReclaim || action == ActionCancel || action == ActionKill
}

// Step is one action of a policy's escalation.
type Step struct {
	// Action is recommend, notify, reclaim, cancel or kill.
	Action string `yaml:"action" json:"action"`
	// After is, for the first step, how long the condition must have lasted,
	// counted from when the scheduler first saw the finding (never from an
	// earlier since the finding claims); for a later step, the grace after the
	// previous step.
	After time.Duration `yaml:"after" json:"after"`
}

// Policy maps one kind of finding, in some pools, to an escalation of actions:
// e.g. idle in dev for 30 min → notify → 15 min later reclaim and requeue.
type Policy struct {
	Name string `yaml:"name" json:"name"`
	// Finding is the kind acted on (schemas.FindingKinds); a hung job can be
	// notified then reclaimed after a grace like an idle one, a memory_capacity
	// finding only recommended or notified.
	Finding schemas.FindingKind `yaml:"finding" json:"finding"`
	// Pools limits the policy to findings in these pools; empty: every pool
	// (protected pools are still never touched).
	Pools []string `yaml:"pools" json:"pools,omitempty"`
	// MinSeverity ignores findings below it (info, warning, critical; "" any).
	MinSeverity schemas.Severity `yaml:"min_severity" json:"min_severity,omitempty"`
	Steps       []Step           `yaml:"steps" json:"steps"`
	// DryRun records what the policy would do, step by step, and does nothing.
	DryRun bool `yaml:"dry_run" json:"dry_run"`
	// MaxActionsPerHour bounds the disruptive actions (reclaim, cancel, kill) the
	// policy takes in one pool within any hour; 0: no bound. Actions held back are
	// taken in a later pass once the hour allows.
	MaxActionsPerHour int `yaml:"max_actions_per_hour" json:"max_actions_per_hour"`
	// OptOutLabels exempt a job carrying any of these labels with that value, e.g.
	// gpupool.io/no-reclaim: "true".
	OptOutLabels map[string]string `yaml:"opt_out_labels" json:"opt_out_labels,omitempty"`
}

// appliesTo reports whether the policy acts on f, whose job is in pool (the
// pool the scheduler resolved, never the one the finding claims: finding.go).
func (p *Policy) appliesTo(f *schemas.Finding, pool string) bool {
	if f.Kind != p.Finding {
		return false
	}
	if len(p.Pools) > 0 && !slices.Contains(p.Pools, pool) {
		return false
	}
	return p.MinSeverity == "" || f.Severity.Rank() >= p.MinSeverity.Rank()
}

// optedOut returns the label that exempts a job with labels, or "".
func (p *Policy) optedOut(labels map[string]string) string {
	for k, v := range p.OptOutLabels {
		if got, ok := labels[k]; ok && got == v {
			return k + "=" + v
		}
	}
	return ""
}

// validatePolicies checks the policies against the model; paths are from the
// scheduler section's root.
func validatePolicies(ps []Policy, m Model) error {
	var errs []error
	fail := func(path, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...)))
	}
	pools := map[string]bool{}
	for _, p := range m.Pools {
		pools[p.Name] = true
	}
	names := map[string]bool{}
	for i, p := range ps {
		path := fmt.Sprintf("policies[%d]", i)
		if p.Name == "" {
			fail(path+".name", "empty")
		} else if names[p.Name] {
			fail(path+".name", "%q is listed twice", p.Name)
		}
		names[p.Name] = true
		if !slices.Contains(schemas.PolicyKinds, p.Finding) {
			fail(path+".finding", "%q is not one of %v", p.Finding, schemas.PolicyKinds)
		}
		for j, pool := range p.Pools {
			if !pools[pool] {
				fail(fmt.Sprintf("%s.pools[%d]", path, j), "%q is not one of pools", pool)
			}
		}
		if p.Finding.Info().ByScheduler {
			errs = append(errs, validateDefragPolicy(path, p)...)
			continue
		}
		if p.MinSeverity != "" && p.MinSeverity.Rank() == 0 {
			fail(path+".min_severity", "%q is not one of %v", p.MinSeverity, schemas.Severities)
		}
		if len(p.Steps) == 0 {
			fail(path+".steps", "list at least one step")
		}
		for j, s := range p.Steps {
			sp := fmt.Sprintf("%s.steps[%d]", path, j)
			if !slices.Contains(policyActions, s.Action) {
				fail(sp+".action", "%q is not one of %v", s.Action, policyActions)
			}
			if s.Action == ActionKill && !p.Finding.Info().PerProcess {
				fail(sp+".action", "kill ends a process, and only %s findings name one", kindList(schemas.PerProcessKinds()))
			}
			if why := p.Finding.Info().NoStop; disruptive(s.Action) && why != "" {
				fail(sp+".action", "%s stops a job, and %s: recommend or notify", s.Action, why)
			}
			if s.After < 0 {
				fail(sp+".after", "%s is negative", s.After)
			}
		}
		if p.MaxActionsPerHour < 0 {
			fail(path+".max_actions_per_hour", "%d is negative", p.MaxActionsPerHour)
		}
	}
	return errors.Join(errs...)
}

// validateDefragPolicy checks a policy on fragmentation findings: one step,
// recommend (name the moves) or reclaim (carry them out); its pools are the
// pools whose jobs it may move.
func validateDefragPolicy(path string, p Policy) []error {
	var errs []error
	if len(p.Steps) != 1 {
		errs = append(errs, fmt.Errorf("%s.steps: a fragmentation policy has one step (recommend, or reclaim to carry out the moves), not %d", path, len(p.Steps)))
	}
	for j, s := range p.Steps {
		sp := fmt.Sprintf("%s.steps[%d]", path, j)
		if s.Action != ActionRecommend && s.Action != ActionReclaim {
			errs = append(errs, fmt.Errorf("%s.action: %q: a fragmentation policy may recommend or reclaim (carry out the moves)", sp, s.Action))
		}
		if s.After < 0 {
			errs = append(errs, fmt.Errorf("%s.after: %s is negative", sp, s.After))
		}
	}
	if p.MinSeverity != "" {
		errs = append(errs, fmt.Errorf("%s.min_severity: a fragmentation finding has no severity", path))
	}
	if p.MaxActionsPerHour < 0 {
		errs = append(errs, fmt.Errorf("%s.max_actions_per_hour: %d is negative", path, p.MaxActionsPerHour))
	}
	return errs
}

// kindList names kinds for a message: "zombie", "a or b".
func kindList(kinds []schemas.FindingKind) string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = string(k)
	}
	return strings.Join(names, " or ")
}
