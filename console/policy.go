package console

import (
	"fmt"
	"slices"
	"time"

	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/schemas"
)

// WithPolicies names the scheduler's policies (scheduler.policies of the
// configuration), so the findings pages can say what each policy will do next
// about an open finding, and when.
func WithPolicies(ps []scheduler.Policy) Option { return func(c *Console) { c.policies = ps } }

// nextStep says what the policies will do next about an open finding f, given
// the policy steps already taken on it (policy name → steps taken) and when the
// last one was: "notify at 2026-11-30 14:30 (dev-idle)", or "" when no policy
// applies.
func nextStep(ps []scheduler.Policy, f schemas.Finding, taken map[string]int, last time.Time) string {
	if f.State == schemas.StateResolved {
		return ""
	}
	for _, p := range ps {
		if p.Finding != f.Kind || (len(p.Pools) > 0 && !slices.Contains(p.Pools, f.Pool)) ||
			(p.MinSeverity != "" && f.Severity.Rank() < p.MinSeverity.Rank()) || len(p.Steps) == 0 {
			continue
		}
		k := taken[p.Name]
		if k >= len(p.Steps) {
			return fmt.Sprintf("%s: every step taken", p.Name)
		}
		at := f.Since.Add(p.Steps[0].After)
		if k > 0 && !last.IsZero() {
			at = last.Add(p.Steps[k].After)
		}
		dry := ""
		if p.DryRun {
			dry = ", dry run: recorded only"
		}
		return fmt.Sprintf("%s at %s (%s%s)", p.Steps[k].Action, at.UTC().Format("2006-01-02 15:04"), p.Name, dry)
	}
	return ""
}
