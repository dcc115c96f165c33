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
FROM actions_log
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
	Teams             []string
	Rows              []findingRow
	Totals            []kindTotal
	All               kindTotal
	T                 *tableView
	// KindsT is the totals per kind's order (a fixed set: never paged).
	KindsT *tableView
	Window window
}

// kindsTable is the totals per kind's order: the kinds' own order (by kind)
// by default.
var kindsTable = &tableDef{name: "finding-totals", prefix: "kinds_", id: "finding-totals", sort: "kind", fixed: true, cols: []sortCol{
	{Key: "kind", Label: "Kind"}, {Key: "open", Label: "Open", Num: true, Desc: true},
	{Key: "resolved", Label: "Resolved", Num: true, Desc: true},
	{Key: "waste", Label: "Waste GPU-h", Num: true, Desc: true}, {Key: "cost", Label: "Waste", Num: true, Desc: true},
}}

var kindCmps = map[string]func(a, b kindTotal) int{
	"kind":     byStr(func(k kindTotal) string { return k.Kind }),
	"open":     byNum(func(k kindTotal) int { return k.Open }),
	"resolved": byNum(func(k kindTotal) int { return k.Resolved }),
	"waste":    byNum(func(k kindTotal) float64 { return k.WasteGPUHours }),
	"cost":     byNum(func(k kindTotal) float64 { return k.Cost }),
}

// findingsTable is the findings list's order: the most waste first by default.
var findingsTable = &tableDef{name: "findings", sort: "waste", desc: true, cols: []sortCol{
	{Key: "kind", Label: "Kind"}, {Key: "severity", Label: "Severity"}, {Key: "state", Label: "State"},
	{Key: "job", Label: "Job"}, {Key: "team", Label: "Owner"}, {Key: "gpus", Label: "GPUs", Desc: true},
	{Key: "since", Label: "Since", Desc: true}, {Key: "last_seen", Label: "Last seen", Desc: true},
	{Key: "waste", Label: "Waste GPU-h", Num: true, Desc: true}, {Key: "cost", Label: "Waste", Num: true, Desc: true},
	{Key: "actions", Label: "Actions taken", Desc: true},
}}

var findingCmps = map[string]func(a, b findingRow) int{
	"kind":      byStr(func(f findingRow) string { return string(f.Kind) }),
	"severity":  byStr(func(f findingRow) string { return string(f.Severity) }),
	"state":     byStr(func(f findingRow) string { return string(f.State) }),
	"job":       byStr(func(f findingRow) string { return f.Job }),
	"team":      byStr(func(f findingRow) string { return f.Team + "/" + f.Project }),
	"gpus":      byNum(func(f findingRow) int { return len(f.GPUUUIDs) }),
	"since":     byNum(func(f findingRow) int64 { return f.Since.UnixNano() }),
	"last_seen": byNum(func(f findingRow) int64 { return f.LastSeen.UnixNano() }),
	"waste":     byNum(func(f findingRow) float64 { return f.WasteGPUHours }),
	"cost":      byNum(func(f findingRow) float64 { return f.WasteCost }),
	"actions":   byNum(func(f findingRow) int64 { return f.Actions }),
}

// findingTeamsSQL is the teams of the viewer's findings: the team filter's
// choices.
const findingTeamsSQL = `SELECT arraySort(groupUniqArrayIf(team, team != '')) AS teams FROM finding_history
WHERE team != '' AND ({all:UInt8} = 1 OR team IN {teams:Array(String)})`

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
	switch d.State {
	case "":
		d.State = "open"
	case "open", "resolved", "all":
	default:
		return nil, badParam("state", d.State, "open, resolved or all")
	}
	if s := q.Get("days"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 400 {
			return nil, badParam("days", s, "1 to 400")
		}
		d.Days = n
	}
	tvs, err := parseTables(r, findingsTable, kindsTable)
	if err != nil {
		return nil, err
	}
	tv := tvs[0]
	d.T, d.KindsT = tv, tvs[1]
	if d.Window, err = pageWindow(r, c.now(ctx), time.Duration(d.Days)*24*time.Hour); err != nil {
		return nil, err
	}
	fs, err := findings.Episodes(ctx, c.st, findings.EpisodeFilter{From: d.Window.From, Kind: schemas.FindingKind(d.Kind),
		Teams: scopeTeams(v, d.Team)})
	if err != nil {
		return nil, fmt.Errorf("console: findings: %w", err)
	}
	ch, err := c.query(ctx, "findings: teams", findingTeamsSQL, teamParams(store.Params{}, v))
	if err != nil {
		return nil, err
	}
	if ch.n() == 1 {
		d.Teams = ch.strs(0, "teams")
	}
	if err := ch.err(); err != nil {
		return nil, err
	}
	d.Teams = withChoice(d.Teams, d.Team)
	var ids []string
	for _, f := range fs {
		resolved := f.State == schemas.StateResolved
		if (d.State == "open" && resolved) || (d.State == "resolved" && !resolved) {
			continue
		}
		d.Rows = append(d.Rows, findingRow{Finding: f})
		ids = append(ids, f.ID)
	}
	d.Totals, d.All = findingTotals(d.Rows)
	d.Totals = pageOf(d.KindsT, d.Totals, kindCmps)
	if err := c.addFindingActions(ctx, d.Rows, ids); err != nil {
		return nil, err
	}
	d.Rows = pageOf(tv, d.Rows, findingCmps)
	return d, nil
}

// findingTotals are the open and resolved episodes and their waste, per kind
// and in all.
func findingTotals(rows []findingRow) ([]kindTotal, kindTotal) {
	totals := map[string]*kindTotal{}
	var all kindTotal
	for _, f := range rows {
		t := totals[string(f.Kind)]
		if t == nil {
			t = &kindTotal{Kind: string(f.Kind)}
			totals[string(f.Kind)] = t
		}
		for _, k := range []*kindTotal{t, &all} {
			if f.State == schemas.StateResolved {
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
	var out []kindTotal
	for _, k := range schemas.FindingKinds {
		if t := totals[string(k)]; t != nil {
			out = append(out, *t)
		}
	}
	return out, all
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
	return res.err()
}

type findingData struct {
	F        schemas.Finding
	Next     string
	Evidence []evidenceItem
	// EvidenceT is the evidence's order (a fixed set: never paged).
	EvidenceT *tableView
	Actions   []scheduler.Action
	Episodes  []schemas.Finding
	// The actions and episodes as the page lists them: sorted, paged.
	ActionsTable  rowsTable[scheduler.Action]
	EpisodesTable rowsTable[schemas.Finding]
}

func (c *Console) findingPage(ctx context.Context, r *http.Request, v viewer) (any, error) {
	id := r.PathValue("id")
	tvs, err := parseTables(r, findingActionsTable, episodesTable, evidenceTable)
	if err != nil {
		return nil, err
	}
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
	d.EvidenceT = tvs[2]
	d.Evidence = pageOf(d.EvidenceT, readEvidence(d.F.Evidence, d.F.Currency), evidenceCmps)
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
	d.ActionsTable = rowsTable[scheduler.Action]{T: tvs[0], Rows: pageOf(tvs[0], slices.Clone(d.Actions), actionCmps)}
	d.EpisodesTable = rowsTable[schemas.Finding]{T: tvs[1], Rows: pageOf(tvs[1], slices.Clone(d.Episodes), episodeCmps)}
	return d, nil
}

// actionsWhere is what the actions list's filters select, each action once
// (its latest row).
const actionsWhere = `FROM (SELECT ts, id, decision, outcome, reason, policy, job, pool, team, finding_id, finding_episode,
        finding_kind, executor, dry_run, actor
    FROM actions_log
    WHERE ({all:UInt8} = 1 OR team IN {teams:Array(String)})
        AND ({job:String} = '' OR job = {job:String} OR startsWith(job, concat({job:String}, '/')))
        AND ({decision:String} = '' OR decision = {decision:String})
        AND ({pool:String} = '' OR pool = {pool:String})
        AND ts >= {from:DateTime64(3, 'UTC')}
    ORDER BY ts DESC, id LIMIT 1 BY id)`

// actionsTable is the actions list's order: newest first by default.
var actionsTable = &tableDef{name: "actions", sort: "time", desc: true, tieBreak: "ts DESC, id",
	cols: []sortCol{
		{Key: "time", Label: "Time", SQL: "ts", Desc: true},
		{Key: "decision", Label: "Decision", SQL: "decision"},
		{Key: "outcome", Label: "Outcome", SQL: "outcome"},
		{Key: "job", Label: "Job", SQL: "job"},
		{Key: "team", Label: "Team", SQL: "team"},
		{Key: "finding", Label: "Finding", SQL: "finding_kind"},
		{Key: "policy", Label: "Policy", SQL: "policy"},
	}}

// actionChoicesSQL is the decisions and pools of the viewer's actions: the
// filters' choices.
const actionChoicesSQL = `SELECT arraySort(groupUniqArrayIf(decision, decision != '')) AS decisions, arraySort(groupUniqArrayIf(pool, pool != '')) AS pools,
    arraySort(groupUniqArrayIf(team, team != '')) AS teams
FROM actions_log WHERE ({all:UInt8} = 1 OR team IN {teams:Array(String)})`

type actionsData struct {
	Job, Decision, Team, Pool string
	Decisions, Pools, Teams   []string
	Rows                      []scheduler.Action
	T                         *tableView
	Window                    window
}

func (c *Console) actionsPage(ctx context.Context, r *http.Request, v viewer) (any, error) {
	q := r.URL.Query()
	d := &actionsData{Job: q.Get("job"), Decision: q.Get("decision"), Team: q.Get("team"), Pool: q.Get("pool")}
	tv, err := parseTable(r, actionsTable)
	if err != nil {
		return nil, err
	}
	d.T = tv
	if d.Window, err = pageWindow(r, c.now(ctx), 0); err != nil {
		return nil, err
	}
	p := store.Params{"job": d.Job, "decision": d.Decision, "pool": d.Pool, "from": tsParam(d.Window.From)}
	switch teams := scopeTeams(v, d.Team); {
	case teams == nil:
		p["all"], p["teams"] = "1", "[]"
	default:
		p["all"], p["teams"] = "0", arrayParam(teams)
	}
	ch, err := c.query(ctx, "actions: choices", actionChoicesSQL, teamParams(store.Params{}, v))
	if err != nil {
		return nil, err
	}
	if ch.n() == 1 {
		d.Decisions, d.Pools, d.Teams = ch.strs(0, "decisions"), ch.strs(0, "pools"), ch.strs(0, "teams")
	}
	if err := ch.err(); err != nil {
		return nil, err
	}
	d.Decisions, d.Pools, d.Teams = withChoice(d.Decisions, d.Decision), withChoice(d.Pools, d.Pool), withChoice(d.Teams, d.Team)
	n, err := c.query(ctx, "actions: count", "SELECT count() AS n "+actionsWhere, p)
	if err != nil {
		return nil, err
	}
	tv.Total = int(n.num0(0, "n"))
	if err := n.err(); err != nil {
		return nil, err
	}
	tv.limitParams(p)
	res, err := c.query(ctx, "actions", "SELECT * "+actionsWhere+" ORDER BY "+tv.orderBy()+" LIMIT {limit:UInt32} OFFSET {offset:UInt64}", p)
	if err != nil {
		return nil, err
	}
	for i := range res.n() {
		d.Rows = append(d.Rows, scheduler.Action{Time: res.time(i, "ts"), ID: res.str(i, "id"), Decision: res.str(i, "decision"),
			Outcome: res.str(i, "outcome"), Reason: res.str(i, "reason"), Policy: res.str(i, "policy"), Job: res.str(i, "job"),
			Pool: res.str(i, "pool"), Team: res.str(i, "team"), FindingID: res.str(i, "finding_id"),
			FindingEpisode: uint32(res.num0(i, "finding_episode")), FindingKind: res.str(i, "finding_kind"),
			Executor: res.str(i, "executor"), DryRun: res.flag(i, "dry_run"), Actor: res.str(i, "actor")})
	}
	if err := res.err(); err != nil {
		return nil, err
	}
	tv.Shown = len(d.Rows)
	return d, nil
}
