package scheduler

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpupool/gpupool/scheduler/engine"
	"github.com/gpupool/gpupool/schemas"
)

// FragmentationFinding is the scheduler's finding of kind fragmentation: in
// one cluster and card type, free GPUs that no waiting job's shape can use
// (stranded) while jobs wait, for as long as both last. The scheduler finds it
// itself, since only it knows where each job runs; it names the moves that
// would undo it (engine.PlanDefrag), and a policy on kind fragmentation may
// carry them out.
type FragmentationFinding struct {
	// ID names the episode: the cluster, card type and Since.
	ID      string              `json:"id"`
	Kind    schemas.FindingKind `json:"kind"`
	Cluster string              `json:"cluster"`
	Card    string              `json:"card"`
	// Since is when stranded GPUs and waiting jobs were first seen together;
	// LastSeen the last pass that saw them.
	Since    time.Time `json:"since"`
	LastSeen time.Time `json:"last_seen"`
	// Stranded, Free, Waiting and LargestOnNode are the figure at LastSeen
	// (placement.Fragmentation).
	Stranded      int `json:"stranded"`
	Free          int `json:"free"`
	Waiting       int `json:"waiting"`
	LargestOnNode int `json:"largest_on_node"`
	// StrandedGPUHours is the stranded GPUs integrated since Since.
	StrandedGPUHours float64 `json:"stranded_gpu_hours"`
	// Plans are the moves that would let waiting gangs start now; empty with
	// NoPlan saying why.
	Plans  []DefragPlan `json:"plans"`
	NoPlan string       `json:"no_plan,omitempty"`
}

// defragState is the open fragmentation findings by cluster/card, the plans
// policies acted on (so each is acted on once), and the moves each policy
// made, for its hourly bound. Guarded by Service.mu.
type defragState struct {
	open  map[string]*FragmentationFinding
	acted map[string]bool
	moves map[string][]time.Time
	last  time.Time
}

// load counts the moves fragmentation policies made in the hour before now,
// from the audit trail read back at start, so that a restart keeps their
// hourly bound.
func (d *defragState) load(rows []Action, now time.Time) {
	for _, r := range rows {
		if r.FindingKind != string(schemas.KindFragmentation) || r.Outcome != OutcomeOK || r.Decision != ActionReclaim || now.Sub(r.Time) >= time.Hour {
			continue
		}
		var moves []DefragMove
		if json.Unmarshal([]byte(r.Details["moves"]), &moves) != nil {
			continue
		}
		if d.moves == nil {
			d.moves = map[string][]time.Time{}
		}
		for range moves {
			d.moves[r.Policy] = append(d.moves[r.Policy], r.Time)
		}
	}
}

// defragEvery is how often, at most, the findings are brought up to date
// and the plans made: planning searches the fleet.
func (s *Service) defragEvery() time.Duration {
	if e := s.cfg.FragmentationEvery; e > 0 {
		return e
	}
	return DefaultFragmentationEvery
}

// FragmentationFindings returns the open fragmentation findings, by cluster
// and card type.
func (s *Service) FragmentationFindings() []FragmentationFinding {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]FragmentationFinding, 0, len(s.defrag.open))
	for _, f := range s.defrag.open {
		c := *f
		c.Plans = slices.Clone(f.Plans)
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b FragmentationFinding) int {
		return strings.Compare(a.Cluster+"/"+a.Card, b.Cluster+"/"+b.Card)
	})
	return out
}

// defragment brings the fragmentation findings up to date from the pass's
// figure and takes the fragmentation policies' steps that are due: the audit
// rows of what they recommended, dry-ran or skipped, and the engine's
// decisions for the moves carried out. Call with s.mu held, after Schedule.
func (s *Service) defragment(now time.Time) (rows []Action, decs []Decision) {
	if !s.defrag.last.IsZero() && now.Sub(s.defrag.last) < s.defragEvery() {
		return nil, nil
	}
	s.defrag.last = now
	fig := s.engine.Fragmentation()
	if s.defrag.open == nil {
		s.defrag.open, s.defrag.acted = map[string]*FragmentationFinding{}, map[string]bool{}
	}
	if s.defrag.moves == nil {
		s.defrag.moves = map[string][]time.Time{}
	}
	seen := map[string]bool{}
	for _, f := range fig {
		if f.Stranded < max(1, s.cfg.FragmentationMinStranded) || f.Waiting == 0 {
			continue
		}
		k := f.Cluster + "/" + f.Card
		seen[k] = true
		ff := s.defrag.open[k]
		if ff == nil {
			ff = &FragmentationFinding{Kind: schemas.KindFragmentation, Cluster: f.Cluster, Card: f.Card, Since: now, LastSeen: now}
			ff.ID = fragFindingID(k, now)
			s.defrag.open[k] = ff
		}
		ff.StrandedGPUHours += float64(ff.Stranded) * now.Sub(ff.LastSeen).Hours()
		ff.LastSeen, ff.Stranded, ff.Free, ff.Waiting, ff.LargestOnNode = now, f.Stranded, f.Free, f.Waiting, f.LargestOnNode
		ff.Plans = s.engine.PlanDefrag(now, f.Cluster, f.Card, engine.DefragOptions{})
		ff.NoPlan = ""
		if len(ff.Plans) == 0 {
			ff.NoPlan = "no waiting gang with gpus_per_node can be made room for by moving checkpointable, preemptible jobs that each fit again elsewhere at once"
		}
	}
	for k, ff := range s.defrag.open {
		if !seen[k] {
			delete(s.defrag.open, k)
			for a := range s.defrag.acted {
				if strings.HasPrefix(a, ff.ID+"/") {
					delete(s.defrag.acted, a)
				}
			}
		}
	}
	for _, k := range sortedKeys(s.defrag.open) {
		ff := s.defrag.open[k]
		for i := range s.cfg.Policies {
			p := &s.cfg.Policies[i]
			if !p.Finding.Info().ByScheduler || now.Sub(ff.Since) < p.Steps[0].After {
				continue
			}
			r, d := s.defragPolicy(p, ff, now)
			rows, decs = append(rows, r...), append(decs, d...)
		}
	}
	return rows, decs
}

// defragPolicy takes policy p's step on finding ff: each plan (made again
// with the jobs p may move) is recommended, dry-run, or carried out, once per
// finding episode and waiting job; past p's hourly bound of moves it is
// skipped, recorded once.
func (s *Service) defragPolicy(p *Policy, ff *FragmentationFinding, now time.Time) (rows []Action, decs []Decision) {
	step := p.Steps[0]
	plans := ff.Plans // made in this pass with every job movable: a policy that keeps none back reuses them
	if len(p.Pools) > 0 || len(p.OptOutLabels) > 0 {
		movable := func(j *Job) bool {
			return (len(p.Pools) == 0 || slices.Contains(p.Pools, j.Pool)) && p.optedOut(j.Spec.Labels) == ""
		}
		plans = s.engine.PlanDefrag(now, ff.Cluster, ff.Card, engine.DefragOptions{Movable: movable})
	}
	for _, plan := range plans {
		key := ff.ID + "/" + p.Name + "/" + plan.For
		if s.defrag.acted[key] {
			continue
		}
		row := Action{Time: now, Decision: step.Action, Policy: p.Name, Job: plan.For, Cluster: plan.Cluster, Card: plan.Card,
			GPUs: plan.MovedGPUs(), FindingID: ff.ID, FindingKind: string(schemas.KindFragmentation), Reason: plan.String(),
			Details: map[string]string{"moves": movesJSON(plan), "stranded": fmt.Sprint(ff.Stranded), "waiting": fmt.Sprint(ff.Waiting)}}
		if w, ok := s.engine.Job(plan.For); ok {
			row.Job, row.Attempt, row.Queue, row.Team, row.Project, row.Pool = auditKey(w), w.Attempt, w.Spec.Queue, w.Spec.Team, w.Spec.Project, w.Pool
		}
		recent := slices.DeleteFunc(s.defrag.moves[p.Name], func(t time.Time) bool { return now.Sub(t) >= time.Hour })
		s.defrag.moves[p.Name] = recent
		switch {
		case step.Action == ActionRecommend:
			row.Outcome = OutcomeOK
		case p.DryRun:
			row.Outcome, row.DryRun = OutcomeDryRun, true
		case p.MaxActionsPerHour > 0 && len(recent)+len(plan.Moves) > p.MaxActionsPerHour:
			if s.defrag.acted[key+"/limit"] {
				continue
			}
			s.defrag.acted[key+"/limit"] = true
			row.Decision, row.Outcome = DecSkip, OutcomeSkipped
			row.Reason = fmt.Sprintf("not done: %d moves in the last hour, %d more would pass max_actions_per_hour %d; would %s", len(recent), len(plan.Moves), p.MaxActionsPerHour, plan.String())
			rows = append(rows, fillRow(row))
			continue
		default:
			d, err := s.engine.Defragment(plan, fmt.Sprintf("moved by policy %s to undo fragmentation of %s %s for %s", p.Name, plan.Cluster, plan.Card, plan.For), now)
			if err != nil {
				row.Outcome, row.Reason = OutcomeFailed, err.Error()
				rows = append(rows, fillRow(row))
				continue
			}
			row.Outcome = OutcomeOK
			decs = append(decs, d...)
			for range plan.Moves {
				s.defrag.moves[p.Name] = append(s.defrag.moves[p.Name], now)
			}
		}
		s.defrag.acted[key] = true
		rows = append(rows, fillRow(row))
	}
	return rows, decs
}

func fillRow(a Action) Action {
	a.fill()
	return a
}

// movesJSON is a plan's moves as the audit row's detail.
func movesJSON(p engine.DefragPlan) string {
	b, _ := json.Marshal(p.Moves)
	return string(b)
}

// fragFindingID names a fragmentation episode.
func fragFindingID(key string, since time.Time) string {
	h := sha256.Sum256([]byte(string(schemas.KindFragmentation) + "\x00" + key + "\x00" + since.UTC().Format(time.RFC3339Nano)))
	return hex.EncodeToString(h[:12])
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
