package scheduler

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// Findings pushed to the scheduler (POST /v1/findings, an in-process caller)
// are held until withdrawn, one per finding ID (a later episode replaces an
// earlier one), and counted against the identity that pushed them: an identity
// may hold at most Config.MaxPushedFindings, and a push that would take it past
// that is refused whole (ErrTooManyFindings, the API's 429 too_many_findings)
// and counted. Each finding's size is bounded too (maxFindingBytes), so that
// what the pushed findings take in memory is bounded by identity.

// DefaultMaxPushedFindings is Config.MaxPushedFindings's default: well above the
// open findings of a large fleet, well below what would strain the scheduler.
const DefaultMaxPushedFindings = 10000

// maxFindingBytes bounds one pushed finding's estimated size (its strings, map
// entries and GPU list): a job's finding on a thousand GPUs is well within it.
const maxFindingBytes = 128 << 10

// inProcess names the pushing identity of calls with no actor (the simulation).
const inProcess = "(in-process)"

// pushedFinding is a finding held, and who pushed it.
type pushedFinding struct {
	f     schemas.Finding
	actor string
}

// pushedFindings holds the findings pushed, by ID, and how many each identity
// holds.
type pushedFindings struct {
	byID    map[string]pushedFinding
	byActor map[string]int
}

func newPushedFindings() pushedFindings {
	return pushedFindings{byID: map[string]pushedFinding{}, byActor: map[string]int{}}
}

// findingBytes estimates the memory f takes.
func findingBytes(f *schemas.Finding) int {
	n := 512 + len(f.ID) + len(f.Kind) + len(f.State) + len(f.Severity) + len(f.Cluster) + len(f.Node) + len(f.Job) +
		len(f.Team) + len(f.Project) + len(f.Pool) + len(f.Card) + len(f.Currency) + len(f.Recommended) + len(f.Recommendation)
	for _, u := range f.GPUUUIDs {
		n += 16 + len(u)
	}
	for k := range f.Evidence {
		n += 48 + len(k)
	}
	for k, v := range f.Labels {
		n += 48 + len(k) + len(v)
	}
	return n
}

// AddFindings gives the scheduler findings from outside its finding source (the
// analyzer pushing them, an operator); a finding marked resolved is withdrawn.
// With an actor in ctx each change is recorded (decision push). A push that
// would leave its identity holding more than Config.MaxPushedFindings is
// refused whole with ErrTooManyFindings.
func (s *Service) AddFindings(ctx context.Context, fs []schemas.Finding) error {
	for i, f := range fs {
		if f.ID == "" || f.Kind == "" {
			return fmt.Errorf("%w: finding %d has no id or kind", ErrInvalidJob, i)
		}
		if !slices.Contains(schemas.FindingKinds, f.Kind) {
			return fmt.Errorf("%w: finding %d: kind %q is not one of %v", ErrInvalidJob, i, f.Kind, schemas.FindingKinds)
		}
		if findingStart(&f).IsZero() {
			return fmt.Errorf("%w: finding %d (%s) has neither since nor first_seen", ErrInvalidJob, i, schemas.Clip(f.ID))
		}
		if n := findingBytes(&f); n > maxFindingBytes {
			s.metrics.findingsRefused("too_large", 1)
			return fmt.Errorf("%w: finding %d (%s) takes about %d bytes, more than the %d a finding may", ErrInvalidJob, i, schemas.Clip(f.ID), n, maxFindingBytes)
		}
	}
	actor := ActorFrom(ctx)
	who := cmp.Or(actor, inProcess)
	s.mu.Lock()
	// The count the identity would hold after the push, each ID once (the
	// push's last word on an ID wins, as it does when applied).
	last := map[string]schemas.Finding{}
	for _, f := range fs {
		last[f.ID] = f
	}
	held := s.pushed.byActor[who]
	for _, id := range slices.Sorted(maps.Keys(last)) {
		f, old := last[id], s.pushed.byID[id]
		had := old.actor == who && old.f.ID != ""
		switch {
		case f.Resolved() && had:
			held--
		case !f.Resolved() && !had:
			held++
		}
	}
	if limit := s.cfg.maxPushedFindings(); held > limit {
		have := s.pushed.byActor[who]
		s.mu.Unlock()
		s.metrics.findingsRefused("too_many", len(fs))
		s.log.Warn("findings push refused: too many held by one identity", "actor", who, "held", have, "after", held, "max", limit)
		return fmt.Errorf("%w: %s holds %d findings, and this push would make %d, more than the %d one identity may (withdraw resolved ones, or raise scheduler.max_pushed_findings)",
			ErrTooManyFindings, who, have, held, limit)
	}
	now := s.now()
	var changed []schemas.Finding
	for _, f := range fs {
		old, ok := s.pushed.byID[f.ID]
		switch {
		case f.Resolved():
			if !ok || old.f.Episode > f.Episode {
				continue
			}
			delete(s.pushed.byID, f.ID)
			s.pushed.byActor[old.actor]--
			if s.pushed.byActor[old.actor] <= 0 {
				delete(s.pushed.byActor, old.actor)
			}
		case ok && old.f.Episode > f.Episode:
			continue // an older episode than the one held
		default:
			if ok {
				s.pushed.byActor[old.actor]--
				if s.pushed.byActor[old.actor] <= 0 {
					delete(s.pushed.byActor, old.actor)
				}
			}
			s.pushed.byID[f.ID] = pushedFinding{f: f, actor: who}
			s.pushed.byActor[who]++
			if k := findingKey(&f); s.memo[k] == nil {
				s.memo[k] = &findingMemo{seen: now} // its policy delays count from now
			}
			if ok && old.f.Episode == f.Episode {
				continue // an update of the occurrence held: nothing new to record
			}
		}
		changed = append(changed, f)
	}
	s.mu.Unlock()
	if actor != "" && len(changed) > 0 {
		s.emit(ctx, pushRows(changed, actor, now), nil)
	}
	s.trigger()
	return nil
}

// PushedFindings returns how many pushed findings the scheduler holds, in all
// and for the identity actor ("" the in-process callers).
func (s *Service) PushedFindings(actor string) (all, byActor int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pushed.byID), s.pushed.byActor[cmp.Or(actor, inProcess)]
}

// findings returns this pass's findings: the source's and the pushed ones, one per
// occurrence.
func (s *Service) findings(ctx context.Context, now time.Time) []schemas.Finding {
	byKey := map[string]schemas.Finding{}
	if s.source != nil {
		fs, err := s.source.Findings(ctx, now)
		if err != nil {
			s.metrics.inc(findingErrs)
			s.log.Warn("read findings", "err", err)
		}
		for _, f := range fs {
			byKey[findingKey(&f)] = f
		}
	}
	s.mu.Lock()
	for _, p := range s.pushed.byID {
		byKey[findingKey(&p.f)] = p.f
	}
	s.mu.Unlock()
	return slices.Collect(maps.Values(byKey))
}
