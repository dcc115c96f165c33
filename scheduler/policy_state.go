package scheduler

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// rateWindow is the window of a policy's rate limit.
const rateWindow = time.Hour

// historyWindow is how far back the audit trail is read at start to rebuild the
// policy steps already taken; a finding open longer than this could be acted on
// again after a restart.
const historyWindow = 14 * 24 * time.Hour

// policyState remembers, per finding occurrence and policy, when each step was
// taken, which skips were already recorded, and the recent disruptive actions of
// each policy in each pool. Everything in it can be rebuilt from the audit trail
// (load), which is what makes policy actions idempotent across restarts.
type policyState struct {
	policies []Policy
	// done[stepKey] holds the time each step was taken (done or dry-run), by step.
	done map[string][]time.Time
	// noted holds skips already recorded: key + step + reason class.
	noted map[string]bool
	// recent holds the times of disruptive actions per policy and pool.
	recent map[string][]time.Time
	// failed holds, per step (noteKey class "failed"), the rounds of executor
	// tries that failed and when the next round may start.
	failed map[string]stepFailures
	// roundWait is the pause after failed round n.
	roundWait func(n int) time.Duration
}

// stepFailures is a step's failed rounds of tries.
type stepFailures struct {
	n       int
	retryAt time.Time
}

func newPolicyState(ps []Policy, roundWait func(int) time.Duration) *policyState {
	return &policyState{policies: ps, done: map[string][]time.Time{}, noted: map[string]bool{}, recent: map[string][]time.Time{},
		failed: map[string]stepFailures{}, roundWait: roundWait}
}

// stepFailed records a failed round of tries of step at; it returns whether that
// was the last round allowed.
func (s *policyState) stepFailed(key string, step int, at time.Time) (final bool) {
	k := noteKey(key, step, "failed")
	f := s.failed[k]
	f.n++
	f.retryAt = at.Add(s.roundWait(f.n))
	s.failed[k] = f
	return f.n >= failedRounds
}

// lastRound reports whether the next round of tries of step is its last.
func (s *policyState) lastRound(key string, step int) bool {
	return s.failed[noteKey(key, step, "failed")].n+1 >= failedRounds
}

// settled reports whether step is not to be tried again: its executor refused
// it, or it failed failedRounds times; or, with now, whether its next round is
// not due yet.
func (s *policyState) settled(key string, step int, now time.Time) bool {
	f := s.failed[noteKey(key, step, "failed")]
	return s.noted[noteKey(key, step, "executor")] || f.n >= failedRounds || now.Before(f.retryAt)
}

func stepKey(policy, findingID string, episode uint32) string {
	return policy + "|" + findingID + "#" + strconv.FormatUint(uint64(episode), 10)
}

func noteKey(key string, step int, class string) string {
	return key + "|" + strconv.Itoa(step) + "|" + class
}

func rateKey(policy, pool string) string { return policy + "|" + pool }

// load rebuilds the state from audit rows of policy steps.
func (s *policyState) load(rows []Action) {
	for _, a := range rows {
		if a.Policy == "" {
			continue
		}
		key := stepKey(a.Policy, a.FindingID, a.FindingEpisode)
		switch a.Outcome {
		case OutcomeOK, OutcomeDryRun:
			s.markDone(key, a.Step, a.Time)
			if disruptive(a.Decision) {
				s.countAction(a.Policy, a.Pool, a.Time)
			}
		case OutcomeSkipped:
			s.noted[noteKey(key, a.Step, a.Details["class"])] = true
		case OutcomeFailed:
			if disruptive(a.Decision) {
				s.stepFailed(key, a.Step, a.Time)
			}
		}
	}
}

func (s *policyState) markDone(key string, step int, at time.Time) {
	d := s.done[key]
	for len(d) <= step {
		d = append(d, time.Time{})
	}
	d[step] = at
	s.done[key] = d
}

// nextStep returns the first step not taken yet and when it falls due: the
// first counts from start, when the scheduler first saw the finding; each later
// one from the step before.
func (s *policyState) nextStep(p *Policy, f *schemas.Finding, start time.Time) (step int, due time.Time, ok bool) {
	d := s.done[stepKey(p.Name, f.ID, f.Episode)]
	step = 0
	for step < len(d) && !d[step].IsZero() {
		step++
	}
	if step >= len(p.Steps) {
		return 0, time.Time{}, false
	}
	base := start
	if step > 0 {
		base = d[step-1]
	}
	return step, base.Add(p.Steps[step].After), true
}

// countAction records a disruptive action for the rate limit.
func (s *policyState) countAction(policy, pool string, at time.Time) {
	k := rateKey(policy, pool)
	s.recent[k] = append(s.recent[k], at)
}

// actionsInWindow counts a policy's disruptive actions in pool during the hour
// before now, forgetting older ones.
func (s *policyState) actionsInWindow(policy, pool string, now time.Time) int {
	k := rateKey(policy, pool)
	ts := slices.DeleteFunc(s.recent[k], func(t time.Time) bool { return !t.After(now.Add(-rateWindow)) })
	s.recent[k] = ts
	return len(ts)
}

// dueStep is a policy step to take now on a finding.
type dueStep struct {
	policy *Policy
	step   int
	f      schemas.Finding
	// res is whose the finding's job is; start when the scheduler first saw it.
	res   resolution
	start time.Time
	key   string
}

// due returns the policy steps due at now, oldest finding first, so that what a
// rate limit holds back is what came last.
func (s *policyState) due(findings []seenFinding, now time.Time) []dueStep {
	fs := slices.Clone(findings)
	slices.SortFunc(fs, func(a, b seenFinding) int {
		return cmp.Or(a.start.Compare(b.start), cmp.Compare(a.f.ID, b.f.ID))
	})
	var out []dueStep
	for i := range fs {
		sf := &fs[i]
		f := &sf.f
		for pi := range s.policies {
			p := &s.policies[pi]
			if !p.appliesTo(f, sf.policyPool()) {
				continue
			}
			step, at, ok := s.nextStep(p, f, sf.start)
			if !ok || now.Before(at) {
				continue
			}
			key := stepKey(p.Name, f.ID, f.Episode)
			if s.settled(key, step, now) {
				continue
			}
			out = append(out, dueStep{policy: p, step: step, f: *f, res: sf.res, start: sf.start, key: key})
		}
	}
	return out
}
