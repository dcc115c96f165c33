package console

import (
	"cmp"
	"context"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/gpupool/gpupool/reports"
	"github.com/gpupool/gpupool/store"
)

// idleBelow is the SM activity under which a GPU held by a job counts as idle
// now.
const idleBelow = 0.01

// fleetHourSQL is each GPU's SM activity per hour over the window, from the
// gpu_activity_hourly view: the sparklines, and the inventory of GPUs that
// reported.
const fleetHourSQL = `SELECT gpu_uuid, any(cluster) AS cluster, any(node) AS node, any(card) AS card, any(mig_profile) AS mig_profile,
    groupArray(toUInt32(dateDiff('hour', {from:DateTime('UTC')}, hour))) AS hours,
    groupArray(ifNull(activity, -1)) AS acts, sum(xid_samples) AS xid_samples
FROM (
    SELECT gpu_uuid, hour, cluster, node, card, mig_profile, activity, xid_samples
    FROM gpu_activity_hourly
    WHERE hour >= {from:DateTime('UTC')} AND hour < {to:DateTime('UTC')}
    ORDER BY hour
)
GROUP BY gpu_uuid`

// fleetNowSQL is each GPU's state over the last minutes: view is
// gpu_state_recent (the per-minute rollup of the last hours, sorted by minute: a
// window of minutes reads a row per GPU and minute) or, for a window that may be
// older than that table keeps, gpu_state_between (the same figures from the raw
// samples; see fleetNowView).
func fleetNowSQL(view string) string {
	return `SELECT gpu_uuid, gpu_index, model, driver_version, fb_total_mib, fb_used_mib, sm_active,
    power_w, temp_c, xid, last_ts
FROM ` + view + `(from = {from:DateTime64(3, 'UTC')}, to = {to:DateTime64(3, 'UTC')})`
}

// recentKept is how far back from the wall clock gpu_state_minute holds every
// minute (migration 0027 keeps three hours at least; an hour's margin).
const recentKept = 2 * time.Hour

// fleetNowView is the view that holds every sample of a window starting at from:
// gpu_state_recent when from is within recentKept of the wall clock, else
// gpu_state_between (a console whose clock is the data's, replaying the past).
func fleetNowView(from, wall time.Time) string {
	if wall.Sub(from) < recentKept {
		return "gpu_state_recent"
	}
	return "gpu_state_between"
}

// runningSQL is the jobs holding GPUs now, each GPU on its own row.
const runningSQL = `SELECT job, team, project, pool, queue, arrayJoin(gpu_uuids) AS gpu_uuid
FROM jobs
WHERE state = 'running' AND start_time <= {to:DateTime64(3, 'UTC')}`

type fleetGPU struct {
	UUID, Cluster, Node, Card, MIG, Model string
	Driver                                string // the NVIDIA driver's version ("": not reported)
	Job, Team, Project, Pool              string
	// Hidden is a GPU held by a job of a team the viewer may not see.
	Hidden         bool
	State          string // allocated, idle, free
	SMNow          float64
	FBUsed, FBTotl float64
	Power, Temp    float64
	XID, XID24     int64
	Reporting      bool
	// Index is the GPU's index on its node (-1: not reporting).
	Index int
	// Act24 is the mean of its hourly SM activity over the last 24 hours (NaN:
	// none measured); Health is healthOf it.
	Act24  float64
	Health string
	Spark  template.HTML
	// spark is its hourly activity over the last 24 hours (NaN: none), drawn
	// for the table's page only.
	spark []float64
}

type cardCount struct {
	Card                         string
	Units, MIG                   int
	Allocated, Idle, Free, Quiet int
}

type driverCount struct {
	Version string
	Units   int
}

type fleetData struct {
	fleetFilter
	Clusters, Cards, Pools []string
	Teams                  []string
	// States and Healths are the state and health filters' choices.
	States, Healths []string
	// Heat is the filtered GPUs' heatmap; HeatUnits the units it draws.
	Heat      template.HTML
	HeatUnits int
	GPUs      []fleetGPU
	Counts    []cardCount
	Total     cardCount
	Nodes     int
	// Drivers counts the GPU units per driver version, most first: a fleet with
	// more than one is mid-upgrade, or has nodes left behind.
	Drivers  []driverCount
	Chart    template.HTML
	From, To time.Time
	T        *tableView
	// CardsT is the card types' order and page.
	CardsT *tableView
}

// cardsTable is the card types' order: by card type by default.
var cardsTable = &tableDef{name: "card-counts", prefix: "cards_", id: "card-counts", sort: "card", cols: []sortCol{
	{Key: "card", Label: "Card"}, {Key: "units", Label: "Units", Num: true, Desc: true},
	{Key: "mig", Label: "MIG slices", Num: true, Desc: true}, {Key: "allocated", Label: "Allocated, busy", Num: true, Desc: true},
	{Key: "idle", Label: "Allocated, idle", Num: true, Desc: true}, {Key: "free", Label: "Free", Num: true, Desc: true},
}}

var cardCmps = map[string]func(a, b cardCount) int{
	"card":      byStr(func(c cardCount) string { return c.Card }),
	"units":     byNum(func(c cardCount) int { return c.Units }),
	"mig":       byNum(func(c cardCount) int { return c.MIG }),
	"allocated": byNum(func(c cardCount) int { return c.Allocated }),
	"idle":      byNum(func(c cardCount) int { return c.Idle }),
	"free":      byNum(func(c cardCount) int { return c.Free }),
}

// fleetTable is the GPU list's order: by cluster, node and GPU by default.
var fleetTable = &tableDef{name: "gpus", sort: "node", cols: []sortCol{
	{Key: "node", Label: "Node"}, {Key: "gpu", Label: "GPU"}, {Key: "card", Label: "Card"},
	{Key: "health", Label: "Health", Desc: true}, {Key: "job", Label: "Job"}, {Key: "team", Label: "Team"},
	{Key: "state", Label: "State"}, {Key: "sm", Label: "SM now", Num: true, Desc: true},
	{Key: "memory", Label: "Memory MiB", Num: true, Desc: true}, {Key: "power", Label: "Power W", Num: true, Desc: true},
}}

var fleetCmps = map[string]func(a, b fleetGPU) int{
	"node": func(a, b fleetGPU) int {
		return cmp.Or(cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.Node, b.Node), cmp.Compare(a.UUID, b.UUID))
	},
	"gpu":    byStr(func(g fleetGPU) string { return g.UUID }),
	"card":   byStr(func(g fleetGPU) string { return g.Card + " " + g.MIG }),
	"health": byNum(func(g fleetGPU) int64 { return g.XID*1_000_000 + g.XID24 }),
	"job":    byStr(func(g fleetGPU) string { return g.Job }),
	"team":   byStr(func(g fleetGPU) string { return g.Team }),
	"state":  byStr(func(g fleetGPU) string { return g.State }),
	"sm":     byNum(func(g fleetGPU) float64 { return g.SMNow }),
	"memory": byNum(func(g fleetGPU) float64 { return g.FBUsed }),
	"power":  byNum(func(g fleetGPU) float64 { return g.Power }),
}

func (c *Console) fleetPage(ctx context.Context, r *http.Request, v viewer) (any, error) {
	q := r.URL.Query()
	tvs, err := parseTables(r, fleetTable, cardsTable)
	if err != nil {
		return nil, err
	}
	now := c.now(ctx)
	f, err := parseFleetFilter(q)
	if err != nil {
		return nil, err
	}
	d := &fleetData{fleetFilter: f, T: tvs[0], CardsT: tvs[1], States: fleetStates, Healths: fleetHealths,
		To: now, From: now.Truncate(time.Hour).Add(-23 * time.Hour)}
	rows, err := c.fleetRows(ctx, d.From, now)
	if err != nil {
		return nil, err
	}
	t := newFleetTally()
	for i := range rows.hours.n() {
		g := rows.gpu(i, v)
		t.choices(g)
		if d.match(g) {
			t.count(d, g)
		}
	}
	if err := cmp.Or(rows.hours.err(), rows.now.err(), rows.running.err()); err != nil {
		return nil, err
	}
	t.finish(d, q)
	return d, nil
}

// fleetRows are the fleet page's three reads: each GPU's last 24 hours, its
// latest sample, and the running jobs holding it.
type fleetRows struct {
	hours, now *rows
	running    *rows
	latest     map[string]int
	held       map[string]fleetHolder
}

type fleetHolder struct{ job, team, project, pool string }

func (c *Console) fleetRows(ctx context.Context, from, now time.Time) (*fleetRows, error) {
	var fr fleetRows
	p := store.Params{"from": from.Format(time.DateTime), "to": now.Truncate(time.Hour).Add(time.Hour).Format(time.DateTime)}
	nowFrom := now.Add(-5 * time.Minute)
	nowSQL := fleetNowSQL(fleetNowView(nowFrom, time.Now()))
	// The three reads are independent: run together, the page waits for the
	// longest, not their sum.
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		fr.hours, err = c.query(gctx, "fleet: hourly activity", fleetHourSQL, p)
		return err
	})
	g.Go(func() (err error) {
		fr.now, err = c.query(gctx, "fleet: latest samples", nowSQL, store.Params{"from": tsParam(nowFrom), "to": tsParam(now)})
		return err
	})
	g.Go(func() (err error) {
		fr.running, err = c.query(gctx, "fleet: running jobs", runningSQL, store.Params{"to": tsParam(now)})
		return err
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	fr.held = map[string]fleetHolder{}
	for i := range fr.running.n() {
		fr.held[fr.running.str(i, "gpu_uuid")] = fleetHolder{fr.running.str(i, "job"), fr.running.str(i, "team"), fr.running.str(i, "project"), fr.running.str(i, "pool")}
	}
	fr.latest = map[string]int{}
	for i := range fr.now.n() {
		fr.latest[fr.now.str(i, "gpu_uuid")] = i
	}
	return &fr, nil
}

// gpu is row i's GPU as viewer v may see it: its day, its latest sample, who
// holds it (another team's job hidden), its state and health.
func (fr *fleetRows) gpu(i int, v viewer) fleetGPU {
	hours, nowRows := fr.hours, fr.now
	g := fleetGPU{UUID: hours.str(i, "gpu_uuid"), Cluster: hours.str(i, "cluster"), Node: hours.str(i, "node"),
		Card: hours.str(i, "card"), MIG: hours.str(i, "mig_profile"), XID24: int64(hours.num0(i, "xid_samples")), SMNow: math.NaN(), Index: -1}
	g.spark, g.Act24 = hourly(hours.floats(i, "hours"), hours.floats(i, "acts"))
	if j, ok := fr.latest[g.UUID]; ok {
		g.Reporting, g.Index = true, int(nowRows.num0(j, "gpu_index"))
		g.Model, g.Driver, g.SMNow = nowRows.str(j, "model"), nowRows.str(j, "driver_version"), nowRows.num(j, "sm_active")
		g.FBUsed, g.FBTotl = nowRows.num0(j, "fb_used_mib"), nowRows.num0(j, "fb_total_mib")
		g.Power, g.Temp, g.XID = nowRows.num(j, "power_w"), nowRows.num(j, "temp_c"), int64(nowRows.num0(j, "xid"))
	}
	g.State = "free"
	if h, ok := fr.held[g.UUID]; ok {
		g.Pool = h.pool
		if v.sees(h.team) {
			g.Job, g.Team, g.Project = h.job, h.team, h.project
		} else {
			g.Hidden = true
		}
		g.State = "allocated"
		if !(g.SMNow >= idleBelow) {
			g.State = "idle"
		}
	}
	g.Health = healthOf(g)
	return g
}

// fleetTally gathers the page's filter choices (over every GPU) and, over
// the GPUs the filter keeps, the counts per card type, the drivers and the
// nodes.
type fleetTally struct {
	clusters, cards, pools, teams, nodes set
	counts                               map[string]*cardCount
	drivers                              map[string]int
}

func newFleetTally() *fleetTally {
	return &fleetTally{clusters: set{}, cards: set{}, pools: set{}, teams: set{}, nodes: set{},
		counts: map[string]*cardCount{}, drivers: map[string]int{}}
}

func (t *fleetTally) choices(g fleetGPU) {
	t.clusters.add(g.Cluster)
	t.cards.add(g.Card)
	t.pools.add(g.Pool)
	t.teams.add(g.Team)
}

func (t *fleetTally) count(d *fleetData, g fleetGPU) {
	t.nodes.add(g.Cluster + "/" + g.Node)
	cc := t.counts[g.Card]
	if cc == nil {
		cc = &cardCount{Card: g.Card}
		t.counts[g.Card] = cc
	}
	for _, k := range []*cardCount{cc, &d.Total} {
		k.Units++
		if g.MIG != "" {
			k.MIG++
		}
		switch g.State {
		case "allocated":
			k.Allocated++
		case "idle":
			k.Idle++
		default:
			k.Free++
		}
		if !g.Reporting {
			k.Quiet++
		}
	}
	if g.Driver != "" {
		t.drivers[g.Driver]++
	}
	d.GPUs = append(d.GPUs, g)
}

// finish sorts, pages and draws what the tally gathered into d.
func (t *fleetTally) finish(d *fleetData, q url.Values) {
	for v, n := range t.drivers {
		d.Drivers = append(d.Drivers, driverCount{Version: v, Units: n})
	}
	slices.SortFunc(d.Drivers, func(a, b driverCount) int {
		return cmp.Or(cmp.Compare(b.Units, a.Units), cmp.Compare(a.Version, b.Version))
	})
	slices.SortFunc(d.GPUs, fleetCmps["node"])
	heat := buildHeatmap(d.GPUs)
	d.Heat, d.HeatUnits = heat.HTML(q), heat.Units
	d.GPUs = pageOf(d.T, d.GPUs, fleetCmps)
	for i := range d.GPUs {
		d.GPUs[i].Spark = sparkline("SM activity, last 24 h, "+d.GPUs[i].UUID, d.GPUs[i].spark)
	}
	d.Clusters, d.Cards, d.Pools, d.Teams, d.Nodes = withChoice(t.clusters.sorted(), d.Cluster), withChoice(t.cards.sorted(), d.Card),
		withChoice(t.pools.sorted(), d.Pool), withChoice(t.teams.sorted(), d.Team), len(t.nodes)
	var labels []string
	var alloc, idle, free []float64
	for _, k := range d.Cards {
		if cc := t.counts[k]; cc != nil {
			d.Counts = append(d.Counts, *cc)
			labels = append(labels, k)
			alloc, idle, free = append(alloc, float64(cc.Allocated)), append(idle, float64(cc.Idle)), append(free, float64(cc.Free))
		}
	}
	d.Counts = pageOf(d.CardsT, d.Counts, cardCmps)
	d.Chart = reports.StackedBars("GPU units per card type now", "units", labels,
		[]reports.Series{{Name: "allocated, busy", Values: alloc}, {Name: "allocated, idle", Values: idle}, {Name: "free", Values: free}})
}

// set collects distinct non-empty strings.
type set map[string]bool

func (s set) add(v string) {
	if v != "" {
		s[v] = true
	}
}

func (s set) sorted() []string {
	out := make([]string, 0, len(s))
	for k := range s {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// hourly is a GPU's SM activity per hour of the last 24 (NaN: none measured)
// from fleetHourSQL's hours and acts, and their mean.
func hourly(hs, acts []float64) ([]float64, float64) {
	spark := make([]float64, 24)
	for k := range spark {
		spark[k] = math.NaN()
	}
	sum, n := 0.0, 0
	for k := range min(len(hs), len(acts)) {
		h, a := hs[k], acts[k]
		if h >= 0 && h < 24 && a >= 0 {
			spark[int(h)] = a
			sum, n = sum+a, n+1
		}
	}
	if n == 0 {
		return spark, math.NaN()
	}
	return spark, sum / float64(n)
}

// fleetFilter is the fleet page's filters: each narrows the heatmap, the
// counts and the GPU table alike ("": all).
type fleetFilter struct {
	Cluster, Card, Pool, Team string
	// State is allocated, idle or free; Health one of fleetHealths.
	State, Health string
	// Node is a node's name (a node drill-down: with Cluster, one node); GPU a
	// GPU unit's UUID.
	Node, GPU string
}

// parseFleetFilter reads the filters of q: state and health take fixed values
// (400 otherwise), the rest is matched as it is.
func parseFleetFilter(q url.Values) (fleetFilter, error) {
	f := fleetFilter{Cluster: q.Get("cluster"), Card: q.Get("card"), Pool: q.Get("pool"), Team: q.Get("team"),
		State: q.Get("state"), Health: q.Get("health"), Node: q.Get("node"), GPU: q.Get("gpu")}
	if f.State != "" && !slices.Contains(fleetStates, f.State) {
		return f, badParam("state", f.State, "one of "+strings.Join(fleetStates, ", "))
	}
	if f.Health != "" && !slices.Contains(fleetHealths, f.Health) {
		return f, badParam("health", f.Health, "one of "+strings.Join(fleetHealths, ", "))
	}
	return f, nil
}

func (f fleetFilter) match(g fleetGPU) bool {
	for _, c := range [][2]string{{f.Cluster, g.Cluster}, {f.Card, g.Card}, {f.Pool, g.Pool}, {f.Team, g.Team},
		{f.State, g.State}, {f.Health, g.Health}, {f.Node, g.Node}, {f.GPU, g.UUID}} {
		if c[0] != "" && c[0] != c[1] {
			return false
		}
	}
	return true
}
