package console

import (
	"bytes"
	"context"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/gpupool/gpupool/reports"
	"github.com/gpupool/gpupool/reports/billing"
	"github.com/gpupool/gpupool/store"
)

// chargebackDailySQL is the period's chargeback_daily rows (the finance view),
// the viewer's teams only: the Parquet download.
const chargebackDailySQL = `SELECT * FROM chargeback_daily
WHERE day >= toDate({from:DateTime('UTC')}) AND day < toDate({to:DateTime('UTC')})
    AND ({all:UInt8} = 1 OR team IN {teams:Array(String)})
ORDER BY day, team, project, model_name, pool, card`

type chargebackData struct {
	Kind, Label    string
	Prev, Next     string
	R              *billing.Report
	Scoped         bool
	Teams, Cards   template.HTML
	Trend          template.HTML
	CSVURL, PQURL  string
	JSONURL        string
	UsedGPUHours   float64
	TeamsTotalCost *float64
	// The breakdowns as the page lists them: sorted by sort and dir (all
	// three), the projects paged.
	T                                  *tableView
	TeamLines, ProjectLines, CardLines []billing.Line
	// The most idle jobs and the queue waits, sorted and paged each on its
	// own (WasteT, WaitT).
	WasteT, WaitT *tableView
	Waste         []billing.Waste
	Waits         []billing.QueueWait
}

// wasteTable is the most idle jobs' order: the most idle GPU-hours first.
var wasteTable = &tableDef{name: "top-waste", prefix: "waste_", id: "top-waste", sort: "idle", desc: true, cols: []sortCol{
	{Key: "job", Label: "Job"}, {Key: "team", Label: "Team"}, {Key: "card", Label: "Card"},
	{Key: "gpu_hours", Label: "GPU-h", Num: true, Desc: true}, {Key: "idle", Label: "Idle GPU-h", Num: true, Desc: true},
	{Key: "idle_ratio", Label: "Idle", Num: true, Desc: true}, {Key: "idle_cost", Label: "Idle cost", Num: true, Desc: true},
}}

var wasteCmps = map[string]func(a, b billing.Waste) int{
	"job":        byStr(func(w billing.Waste) string { return w.Job }),
	"team":       byStr(func(w billing.Waste) string { return w.Team }),
	"card":       byStr(func(w billing.Waste) string { return w.Card }),
	"gpu_hours":  byNum(func(w billing.Waste) float64 { return w.GPUHours }),
	"idle":       byNum(func(w billing.Waste) float64 { return w.IdleGPUHours }),
	"idle_ratio": byNum(func(w billing.Waste) float64 { return w.IdleRatio }),
	"idle_cost":  byNum(func(w billing.Waste) float64 { return optVal(w.IdleCost) }),
}

// waitTable is the queue waits' order: by team and pool.
var waitTable = &tableDef{name: "queue-wait", prefix: "wait_", id: "queue-wait", sort: "team", cols: []sortCol{
	{Key: "team", Label: "Team"}, {Key: "pool", Label: "Pool"}, {Key: "jobs", Label: "Jobs", Num: true, Desc: true},
	{Key: "p50", Label: "p50 h", Num: true, Desc: true}, {Key: "p95", Label: "p95 h", Num: true, Desc: true},
	{Key: "queued", Label: "Queued GPU-h", Num: true, Desc: true},
}}

var waitCmps = map[string]func(a, b billing.QueueWait) int{
	"team":   byStr(func(w billing.QueueWait) string { return w.Team + "/" + w.Pool }),
	"pool":   byStr(func(w billing.QueueWait) string { return w.Pool + "/" + w.Team }),
	"jobs":   byNum(func(w billing.QueueWait) int64 { return w.Jobs }),
	"p50":    byNum(func(w billing.QueueWait) float64 { return w.P50Hours }),
	"p95":    byNum(func(w billing.QueueWait) float64 { return w.P95Hours }),
	"queued": byNum(func(w billing.QueueWait) float64 { return w.QueuedGPUHours }),
}

// linesTable is the chargeback breakdowns' order: by name by default.
var linesTable = &tableDef{name: "lines", sort: "name", cols: []sortCol{
	{Key: "name", Label: "Name"}, {Key: "jobs", Label: "Jobs", Num: true, Desc: true},
	{Key: "gpu_hours", Label: "GPU-h", Num: true, Desc: true}, {Key: "used", Label: "Used GPU-h", Num: true, Desc: true},
	{Key: "idle", Label: "Idle GPU-h", Num: true, Desc: true}, {Key: "idle_ratio", Label: "Idle", Num: true, Desc: true},
	{Key: "cost", Label: "Cost", Num: true, Desc: true}, {Key: "idle_cost", Label: "Idle cost", Num: true, Desc: true},
	{Key: "failed", Label: "Failed reruns", Num: true, Desc: true}, {Key: "energy", Label: "Energy kWh", Num: true, Desc: true},
	{Key: "change", Label: "vs previous", Num: true, Desc: true},
}}

func optVal(v *float64) float64 {
	if v == nil {
		return math.Inf(-1)
	}
	return *v
}

var lineCmps = map[string]func(a, b billing.Line) int{
	"name":       byStr(func(l billing.Line) string { return l.Team + "/" + l.Project + "/" + l.Card }),
	"jobs":       byNum(func(l billing.Line) int64 { return l.Jobs }),
	"gpu_hours":  byNum(func(l billing.Line) float64 { return l.GPUHours }),
	"used":       byNum(func(l billing.Line) float64 { return l.UsedGPUHours }),
	"idle":       byNum(func(l billing.Line) float64 { return l.IdleGPUHours }),
	"idle_ratio": byNum(func(l billing.Line) float64 { return l.IdleRatio() }),
	"cost":       byNum(func(l billing.Line) float64 { return optVal(l.Cost) }),
	"idle_cost":  byNum(func(l billing.Line) float64 { return optVal(l.IdleCost) }),
	"failed":     byNum(func(l billing.Line) float64 { return optVal(l.FailedRerunCost) }),
	"energy":     byNum(func(l billing.Line) float64 { return l.EnergyKWh }),
	"change":     byNum(func(l billing.Line) float64 { return optVal(l.CostChange) }),
}

// sortLines sorts the report's breakdowns for the page (copies: the report is
// cached) and pages the projects.
func (d *chargebackData) sortLines(tv *tableView) {
	d.T = tv
	all := &tableView{def: tv.def, Sort: tv.Sort, Desc: tv.Desc, Page: 1, Per: math.MaxInt32}
	d.TeamLines = pageOf(all, slices.Clone(d.R.Teams), lineCmps)
	d.CardLines = pageOf(all, slices.Clone(d.R.Cards), lineCmps)
	d.ProjectLines = pageOf(tv, slices.Clone(d.R.Projects), lineCmps)
}

// period reads the period picker: kind day, week or month (default month) and
// at, a label of that kind (default: the one holding the data's now).
func (c *Console) period(ctx context.Context, r *http.Request) (string, reports.Period, error) {
	q := r.URL.Query()
	kind, at := q.Get("period"), q.Get("at")
	now := c.now(ctx).Add(-time.Minute)
	if kind == "" {
		kind = "month"
	}
	if at == "" {
		at = periodLabel(kind, now)
	}
	switch kind {
	case "day", "week", "month":
	default:
		return "", reports.Period{}, fmt.Errorf("%w: period %q: want day, week or month", errNotFound, kind)
	}
	p, err := reports.ParsePeriod(at, time.UTC)
	if err != nil {
		return "", reports.Period{}, fmt.Errorf("%w: at: %v", errNotFound, err)
	}
	return kind, p, nil
}

// periodLabel names the day, ISO week or month (kind) holding t.
func periodLabel(kind string, t time.Time) string {
	switch kind {
	case "day":
		return t.Format("2006-01-02")
	case "week":
		y, w := t.ISOWeek()
		return fmt.Sprintf("%d-W%02d", y, w)
	}
	return t.Format("2006-01")
}

// keepWarm builds the current day's, week's and month's chargeback whenever the
// chargeback is refreshed, checking every minute, so that the first view of them
// after a refresh is served from the cache too.
func (c *Console) keepWarm(ctx context.Context) {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		now := c.now(ctx).Add(-time.Minute)
		for _, kind := range []string{"month", "week", "day"} {
			p, err := reports.ParsePeriod(periodLabel(kind, now), time.UTC)
			if err == nil {
				_, err = c.reports.get(ctx, c, p)
			}
			if err != nil && ctx.Err() == nil {
				c.log.Warn("console: chargeback warm-up failed", "period", kind, "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// nextPeriod is the period of the same kind after p.
func nextPeriod(p reports.Period) string {
	switch len(p.Label) {
	case 7:
		return p.To.Format("2006-01")
	case 10:
		return p.To.Format("2006-01-02")
	}
	y, w := p.To.ISOWeek()
	return fmt.Sprintf("%d-W%02d", y, w)
}

// report builds the period's chargeback, as `gpupool report run` does, cut to
// what the viewer may see: the page and every download (CSV, JSON, Parquet)
// render this one scoped report.
func (c *Console) report(ctx context.Context, r *http.Request, v viewer) (string, *billing.Report, error) {
	kind, p, err := c.period(ctx, r)
	if err != nil {
		return "", nil, err
	}
	rep, err := c.reports.get(ctx, c, p)
	if err != nil {
		return "", nil, fmt.Errorf("console: chargeback: %w", err)
	}
	return kind, billing.Scoped(rep, v.reportScope()), nil
}

// reportScope is the viewer's scope of the chargeback: the fleet for admin,
// operator and finance, the team roles' teams otherwise.
func (v viewer) reportScope() billing.Scope {
	if v.all {
		return billing.FleetScope()
	}
	return billing.TeamScope(v.teams...)
}

// refreshVersionSQL changes whenever the analyzer refreshes an hour of the
// chargeback: the figures of a period change only then.
const refreshVersionSQL = `SELECT version FROM chargeback_version`

// refreshVersion names the chargeback's state: it changes with every refresh.
func (c *Console) refreshVersion(ctx context.Context) (string, error) {
	r, err := c.query(ctx, "chargeback version", refreshVersionSQL, nil)
	if err != nil {
		return "", err
	}
	if r.n() == 0 {
		return "", nil
	}
	return r.str(0, "version"), r.err()
}

// reportCache keeps the chargeback of the periods viewed, each for as long as
// the chargeback has not been refreshed since: billing.Build reads the finance
// views for the period and the one before it, which takes seconds for a month
// of a large fleet, and the figures only move when an hour is refreshed. The
// report's finding and queue-wait lists are as of that build.
type reportCache struct {
	mu      sync.Mutex
	entries map[string]cachedReport
}

type cachedReport struct {
	version string
	rep     *billing.Report
}

// maxCachedReports bounds the cache: the periods most viewed are few.
const maxCachedReports = 32

func (rc *reportCache) get(ctx context.Context, c *Console, p reports.Period) (*billing.Report, error) {
	version, err := c.refreshVersion(ctx)
	if err != nil {
		return nil, err
	}
	st := c.st
	key := p.Label + "@" + p.From.Location().String()
	rc.mu.Lock()
	e, ok := rc.entries[key]
	rc.mu.Unlock()
	if ok && e.version == version {
		return e.rep, nil
	}
	rep, err := billing.Build(ctx, st, p)
	if err != nil {
		return nil, err
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.entries == nil || len(rc.entries) >= maxCachedReports {
		rc.entries = map[string]cachedReport{}
	}
	rc.entries[key] = cachedReport{version: version, rep: rep}
	return rep, nil
}

// scopeReport is a copy of a report with a team viewer's own lines only
// (billing.Scoped); the cached report it is cut from is left as it is.
func scopeReport(r billing.Report, v viewer) *billing.Report {
	return billing.Scoped(&r, v.reportScope())
}

func (c *Console) chargebackPage(ctx context.Context, r *http.Request, v viewer) (any, error) {
	tvs, err := parseTables(r, linesTable, wasteTable, waitTable)
	if err != nil {
		return nil, err
	}
	tv := tvs[0]
	kind, rep, err := c.report(ctx, r, v)
	if err != nil {
		return nil, err
	}
	p := reports.Period{Label: rep.Period.Label, From: rep.Period.From, To: rep.Period.To}
	d := &chargebackData{Kind: kind, Label: rep.Period.Label, Prev: p.Previous().Label, Next: nextPeriod(p), R: rep, Scoped: !v.all}
	d.CSVURL = "/chargeback.csv?period=" + kind + "&at=" + d.Label
	d.JSONURL = "/chargeback.json?period=" + kind + "&at=" + d.Label
	d.PQURL = "/chargeback.parquet?period=" + kind + "&at=" + d.Label
	d.sortLines(tv)
	d.WasteT, d.WaitT = tvs[1], tvs[2]
	d.Waste = pageOf(d.WasteT, slices.Clone(rep.TopWaste), wasteCmps)
	d.Waits = pageOf(d.WaitT, slices.Clone(rep.QueueWait), waitCmps)
	var labels []string
	var used, idle []float64
	unit := rep.Currency
	for _, l := range rep.Teams {
		labels = append(labels, l.Team)
		if unit != "" && l.Cost != nil && l.IdleCost != nil {
			used, idle = append(used, *l.Cost-*l.IdleCost), append(idle, *l.IdleCost)
		} else {
			unit = "GPU-h"
			used, idle = append(used, l.UsedGPUHours+l.UnmeasuredGPUHours), append(idle, l.IdleGPUHours)
		}
	}
	d.Teams = reports.StackedBars("Cost by team: used and idle ("+unit+")", unit, labels,
		[]reports.Series{{Name: "used", Values: used}, {Name: "idle", Values: idle}})
	if len(rep.Cards) > 0 {
		labels, used, idle = nil, nil, nil
		for _, l := range rep.Cards {
			labels = append(labels, l.Card)
			used, idle = append(used, l.UsedGPUHours+l.UnmeasuredGPUHours), append(idle, l.IdleGPUHours)
		}
		d.Cards = reports.StackedBars("GPU-hours by card type: used and idle", "GPU-h", labels,
			[]reports.Series{{Name: "used", Values: used}, {Name: "idle", Values: idle}})
	}
	if len(rep.IdleTrend) > 1 {
		labels = nil
		cost, idleCost := []float64{}, []float64{}
		for _, t := range rep.IdleTrend {
			labels = append(labels, t.Label)
			cost, idleCost = append(cost, optNaN(t.Cost)), append(idleCost, optNaN(t.IdleCost))
		}
		d.Trend = reports.Lines("Cost and idle cost per "+map[bool]string{true: "hour", false: "day"}[kind == "day"], rep.Currency, labels,
			[]reports.Series{{Name: "idle cost", Values: idleCost}, {Name: "cost", Values: cost}})
	}
	d.UsedGPUHours = rep.Totals.UsedGPUHours
	return d, nil
}

func optNaN(v *float64) float64 {
	if v == nil {
		return math.NaN()
	}
	return *v
}

// chargebackDownload downloads the period's report in format (csv or json) as
// `gpupool report run -f <format>` writes it, rendered from the same scoped
// report as the page (cut to the viewer's teams).
func (c *Console) chargebackDownload(format, contentType string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v := c.viewer(r)
		_, rep, err := c.report(r.Context(), r, v)
		if err != nil {
			c.downloadError(w, err)
			return
		}
		var buf bytes.Buffer
		if err := billing.Render(&buf, rep, format); err != nil {
			c.downloadError(w, fmt.Errorf("console: chargeback %s: %w", format, err))
			return
		}
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Content-Disposition", `attachment; filename="`+billing.FileName("chargeback", rep.Period.Label, format)+`"`)
		_, _ = w.Write(buf.Bytes())
	}
}

// chargebackParquet downloads the period's chargeback_daily rows as Parquet,
// filtered in SQL by the teams of the same scope as the page and the report's
// downloads.
func (c *Console) chargebackParquet(w http.ResponseWriter, r *http.Request) {
	scope := c.viewer(r).reportScope()
	_, p, err := c.period(r.Context(), r)
	if err != nil {
		c.downloadError(w, err)
		return
	}
	params := store.Params{"from": p.From.UTC().Format(time.DateTime), "to": p.To.UTC().Format(time.DateTime), "all": "1", "teams": "[]"}
	if !scope.All() {
		params["all"], params["teams"] = "0", arrayParam(scope.Teams())
	}
	res, err := c.st.Query(r.Context(), chargebackDailySQL, params)
	if err != nil {
		c.downloadError(w, fmt.Errorf("console: chargeback parquet: %w", err))
		return
	}
	w.Header().Set("Content-Type", "application/vnd.apache.parquet")
	w.Header().Set("Content-Disposition", `attachment; filename="chargeback-daily-`+p.Label+`.parquet"`)
	if err := reports.WriteParquet(w, res); err != nil {
		c.log.Warn("console parquet failed", "err", err)
	}
}

func (c *Console) downloadError(w http.ResponseWriter, err error) {
	if isClientError(err) {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.log.Warn("console download failed", "err", err) // the engine's text stays in the log
	http.Error(w, internalErrorMessage, http.StatusInternalServerError)
}
