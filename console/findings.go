package console

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpupool/gpupool/analyzer/findings"
	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/scheduler/audit"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
)

// findingActionsSQL counts the scheduler's actions on each finding episode.
const findingActionsSQL = `SELECT finding_id, finding_episode, uniqExact(id) AS actions,
    argMax(decision, ts) AS last_decision, argMax(outcome, ts) AS last_outcome, max(ts) AS last_at,
    groupUniqArrayIf(concat(toString(policy), '#', toString(step)), policy != '') AS policy_steps
FROM actions
WHERE finding_id IN {ids:Array(String)}
GROUP BY finding_id, finding_episode`

type findingRow struct {
	schemas.Finding
	Actions                   int64
	LastDecision, LastOutcome string
	LastAt                    time.Time
	// Next is what a policy will do next about the finding, and when.
	Next string
}

type kindTotal struct {
	Kind                string
	Open, Resolved      int
	WasteGPUHours, Cost float64
	Currency            string
}

type findingsData struct {
	State, Kind, Team string
	Days              int
	Kinds             []schemas.FindingKind
	Rows              []findingRow
	Totals            []kindTotal
	All               kindTotal
}

// scopeTeams is the team filter of a list: the one team asked for when the
// viewer may see it, else the viewer's teams (nil: every team).
func scopeTeams(v viewer, team string) []string {
	switch {
	case team != "" && v.sees(team):
		return []string{team}
	case team != "":
		return []string{}
	}
	return v.scope()
}

func (c *Console) findingsPage(ctx context.Context, r *http.Request, v viewer) (any, error) {
	q := r.URL.Query()
	d := &findingsData{State: q.Get("state"), Kind: q.Get("kind"), Team: q.Get("team"), Days: 30, Kinds: schemas.FindingKinds}
	if d.State == "" {
		d.State = "open"
	}
	if s := q.Get("days"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 400 {
			return nil, fmt.Errorf("%w: days %q: want 1 to 400", errNotFound, s)
		}
		d.Days = n
	}
	now := c.now(ctx)
	fs, err := findings.Episodes(ctx, c.st, findings.EpisodeFilter{From: now.AddDate(0, 0, -d.Days), Kind: schemas.FindingKind(d.Kind),
		Teams: scopeTeams(v, d.Team)})
	if err != nil {
		return nil, fmt.Errorf("console: findings: %w", err)
	}
	totals := map[string]*kindTotal{}
	var ids []string
	for _, f := range fs {
		resolved := f.State == schemas.StateResolved
		if (d.State == "open" && resolved) || (d.State == "resolved" && !resolved) {
			continue
		}
		d.Rows = append(d.Rows, findingRow{Finding: f})
		ids = append(ids, f.ID)
		t := totals[string(f.Kind)]
		if t == nil {
			t = &kindTotal{Kind: string(f.Kind)}
			totals[string(f.Kind)] = t
		}
		for _, k := range []*kindTotal{t, &d.All} {
			if resolved {
				k.Resolved++
			} else {
				k.Open++
			}
			k.WasteGPUHours += f.WasteGPUHours
			if f.Currency != "" {
				k.Cost += f.WasteCost
				k.Currency = f.Currency
			}
		}
	}
	for _, k := range schemas.FindingKinds {
		if t := totals[string(k)]; t != nil {
			d.Totals = append(d.Totals, *t)
		}
	}
	if err := c.addFindingActions(ctx, d.Rows, ids); err != nil {
		return nil, err
	}
	if len(d.Rows) > c.cfg.MaxRows {
		d.Rows = d.Rows[:c.cfg.MaxRows]
	}
	return d, nil
}

func (c *Console) addFindingActions(ctx context.Context, rs []findingRow, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	res, err := c.query(ctx, "finding actions", findingActionsSQL, store.Params{"ids": arrayParam(ids)})
	if err != nil {
		return err
	}
	type key struct {
		id string
		ep uint32
	}
	idx := map[key]int{}
	for i := range res.n() {
		idx[key{res.str(i, "finding_id"), uint32(res.num0(i, "finding_episode"))}] = i
	}
	for k := range rs {
		taken := map[string]int{}
		if i, ok := idx[key{rs[k].ID, rs[k].Episode}]; ok {
			rs[k].Actions, rs[k].LastDecision = int64(res.num0(i, "actions")), res.str(i, "last_decision")
			rs[k].LastOutcome, rs[k].LastAt = res.str(i, "last_outcome"), res.time(i, "last_at")
			for _, ps := range res.strs(i, "policy_steps") {
				name, _, _ := strings.Cut(ps, "#")
				taken[name]++
			}
		}
		rs[k].Next = nextStep(c.policies, rs[k].Finding, taken, rs[k].LastAt)
	}
	return nil
}

type evidenceItem struct {
	Name  string
	Value float64
}

type findingData struct {
	F        schemas.Finding
	Next     string
	Evidence []evidenceItem
	Actions  []scheduler.Action
	Episodes []schemas.Finding
}

func (c *Console) findingPage(ctx context.Context, r *http.Request, v viewer) (any, error) {
	id := r.PathValue("id")
	var ep uint32
	if s := r.URL.Query().Get("episode"); s != "" {
		n, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("%w: episode %q: want a number", errNotFound, s)
		}
		ep = uint32(n)
	}
	eps, err := findings.Episodes(ctx, c.st, findings.EpisodeFilter{ID: id})
	if err != nil {
		return nil, fmt.Errorf("console: finding: %w", err)
	}
	if len(eps) == 0 {
		return nil, fmt.Errorf("%w: no finding %q", errNotFound, id)
	}
	d := &findingData{Episodes: eps, F: eps[0]} // latest seen first
	for _, f := range eps {
		if f.Episode == ep {
			d.F = f
		}
	}
	if !v.sees(d.F.Team) {
		// Answered as for a finding that does not exist (see jobPage).
		c.log.Info("console finding of another team", "identity", v.Name(), "finding", id)
		return nil, fmt.Errorf("%w: no finding %q", errNotFound, id)
	}
	for k, x := range d.F.Evidence {
		d.Evidence = append(d.Evidence, evidenceItem{k, x})
	}
	slices.SortFunc(d.Evidence, func(a, b evidenceItem) int {
		if a.Name < b.Name {
			return -1
		}
		return 1
	})
	f := scheduler.ActionFilter{Job: d.F.Job, Since: d.F.FirstSeen.Add(-time.Hour)}
	all, err := audit.NewStoreRecorder(c.st).Actions(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("console: finding actions: %w", err)
	}
	steps, last := map[string]bool{}, time.Time{}
	taken := map[string]int{}
	for _, a := range all {
		if a.FindingID == d.F.ID && (a.FindingEpisode == d.F.Episode || a.FindingEpisode == 0) {
			d.Actions = append(d.Actions, a)
			if k := fmt.Sprintf("%s#%d", a.Policy, a.Step); a.Policy != "" && !steps[k] {
				steps[k] = true
				taken[a.Policy]++
			}
			last = a.Time
		}
	}
	d.Next = nextStep(c.policies, d.F, taken, last)
	return d, nil
}

type actionsData struct {
	Job, Decision, Team, Pool string
	Rows                      []scheduler.Action
	Limit                     int
}

func (c *Console) actionsPage(ctx context.Context, r *http.Request, v viewer) (any, error) {
	q := r.URL.Query()
	d := &actionsData{Job: q.Get("job"), Decision: q.Get("decision"), Team: q.Get("team"), Pool: q.Get("pool"), Limit: c.cfg.MaxRows}
	teams := scopeTeams(v, d.Team)
	f := scheduler.ActionFilter{Job: d.Job, Decision: d.Decision, Pool: d.Pool, Team: d.Team, Limit: d.Limit}
	if teams != nil && len(teams) == 0 {
		return d, nil
	}
	if len(teams) == 1 {
		f.Team = teams[0]
	} else if teams != nil {
		f.Limit = 0 // filtered here, then cut
	}
	rows, err := audit.NewStoreRecorder(c.st).Actions(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("console: actions: %w", err)
	}
	for _, a := range rows {
		if teams == nil || slices.Contains(teams, a.Team) {
			d.Rows = append(d.Rows, a)
		}
	}
	slices.Reverse(d.Rows) // newest first
	if len(d.Rows) > d.Limit {
		d.Rows = d.Rows[:d.Limit]
	}
	return d, nil
}
