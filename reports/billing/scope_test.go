package billing

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/gpupool/gpupool/reports"
)

// teamSections are the CSV sections a team's report may hold: its own lines and
// the totals summed from them. Every other section is fleet-wide.
var teamSections = []string{"total", "previous_total", "change", "team", "project", "top_waste", "finding", "queue_wait", "output"}

// leakCheck is what a team's export must not contain: other teams' names (and
// their projects, jobs, models and pools), and fleet-wide figures (the fleet's
// totals, unallocated capacity, other teams' costs and GPU-hours).
type leakCheck struct {
	team    string
	names   []string
	numbers []float64
}

// newLeakCheck derives, from the fleet's report, what team's exports must not
// show. A figure that is also one of team's own is not counted (it may appear
// for good reason).
func newLeakCheck(t *testing.T, fleet *Report, team string) leakCheck {
	t.Helper()
	own := map[string]bool{}
	var ownNumbers []float64
	mine := func(owner string, names []string, nums ...float64) {
		for _, n := range names {
			if owner == team {
				own[n] = true
			}
		}
		if owner == team {
			ownNumbers = append(ownNumbers, nums...)
		}
	}
	var other []string
	var numbers []float64
	add := func(owner string, names []string, nums ...float64) {
		mine(owner, names, nums...)
		if owner != team {
			other = append(other, names...)
			numbers = append(numbers, nums...)
		}
	}
	for _, l := range fleet.Teams {
		add(l.Team, []string{l.Team}, val0(l.Cost), l.GPUHours, val0(l.IdleCost), l.IdleGPUHours, l.EnergyKWh)
	}
	for _, l := range fleet.Projects {
		add(l.Team, []string{l.Team, l.Project}, val0(l.Cost), l.GPUHours)
	}
	for _, w := range fleet.TopWaste {
		add(w.Team, []string{w.Team, w.Job, w.Project}, w.IdleGPUHours, val0(w.IdleCost))
	}
	for _, f := range fleet.Findings {
		add(f.Team, []string{f.Team, f.Job, f.Project})
	}
	for _, q := range fleet.QueueWait {
		add(q.Team, []string{q.Team, q.Pool})
	}
	for _, o := range fleet.Output {
		add(o.Team, []string{o.Team, o.Model}, o.GPUHours)
	}
	tot := fleet.Totals
	numbers = append(numbers, val0(tot.Cost), tot.GPUHours, val0(tot.IdleCost), tot.IdleGPUHours, tot.EnergyKWh,
		tot.UnallocatedGPUHours, val0(tot.UnallocatedCost), val0(fleet.PreviousTotals.Cost), fleet.PreviousTotals.GPUHours)
	for _, u := range fleet.Unallocated {
		numbers = append(numbers, u.CapacityGPUHours, u.UnallocatedGPUHours)
	}
	c := leakCheck{team: team}
	for _, n := range other {
		if n != "" && !own[n] && !slices.Contains(c.names, n) {
			c.names = append(c.names, n)
		}
	}
	for _, x := range numbers {
		// Small whole numbers are counts, hours of day and ratios everywhere:
		// they prove nothing either way.
		if x != 0 && (x != math.Trunc(x) || x >= 100) && !slices.ContainsFunc(ownNumbers, func(y float64) bool { return sameFigure(x, y) }) {
			c.numbers = append(c.numbers, x)
		}
	}
	if len(c.names) == 0 || len(c.numbers) == 0 {
		t.Fatalf("the fixture has nothing %s must not see (names %v, figures %v): the test would prove nothing", team, c.names, c.numbers)
	}
	return c
}

func val0(v *float64) float64 {
	if v == nil {
		return 0
	}
	return *v
}

// sameFigure: equal, or equal as printed with two decimals (HTML, Slack).
func sameFigure(x, y float64) bool {
	return math.Abs(x-y) < 1e-9 || math.Abs(math.Round(x*100)/100-math.Round(y*100)/100) < 1e-9
}

var (
	numberToken = regexp.MustCompile(`\d+(?:\.\d+)?`)
	nameToken   = regexp.MustCompile(`[A-Za-z0-9_./-]+`)
)

// text checks a rendering's text: no other team's name as a word, no fleet
// figure as a number.
func (c leakCheck) text(t *testing.T, what, s string) {
	t.Helper()
	words := map[string]bool{}
	for _, w := range nameToken.FindAllString(s, -1) {
		words[w] = true
		for _, part := range strings.FieldsFunc(w, func(r rune) bool { return r == '/' || r == '.' }) {
			words[part] = true
		}
	}
	for _, n := range c.names {
		if words[n] || strings.Contains(s, n+"/") {
			t.Errorf("%s for %s names %q (another team's)", what, c.team, n)
		}
	}
	for _, tok := range numberToken.FindAllString(s, -1) {
		for _, f := range c.numbers {
			if printedAs(tok, f) {
				t.Errorf("%s for %s shows %s, a fleet-wide or another team's figure (%v)", what, c.team, tok, f)
			}
		}
	}
}

// printedAs reports whether tok is f as printed: in full, or with two decimals
// (money and hours in HTML and Slack).
func printedAs(tok string, f float64) bool {
	x, err := strconv.ParseFloat(tok, 64)
	if err != nil {
		return false
	}
	if i := strings.IndexByte(tok, '.'); i >= 0 && len(tok)-i-1 == 2 {
		return math.Abs(x-math.Round(f*100)/100) < 1e-9
	}
	return math.Abs(x-f) < 1e-9
}

func (c leakCheck) number(t *testing.T, what string, x float64) {
	t.Helper()
	for _, f := range c.numbers {
		if math.Abs(x-f) < 1e-9 {
			t.Errorf("%s for %s shows %v, a fleet-wide or another team's figure (%v)", what, c.team, x, f)
		}
	}
}

// json checks a JSON rendering: every string as text, every number as a figure.
func (c leakCheck) json(t *testing.T, what string, data []byte) {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case string:
			c.text(t, what, x)
		case float64:
			c.number(t, what, x)
		}
	}
	walk(v)
}

// records checks the long-form table (CSV or Parquet): only a team's sections,
// no other team's name in any cell, no fleet figure as a value.
func (c leakCheck) records(t *testing.T, what string, recs [][]string) {
	t.Helper()
	if len(recs) < 2 || !slices.Equal(recs[0], CSVHeader) {
		t.Fatalf("%s: %d records, header %v", what, len(recs), recs)
	}
	for _, rec := range recs[1:] {
		if !slices.Contains(teamSections, rec[1]) {
			t.Errorf("%s for %s has a fleet-wide section %q: %v", what, c.team, rec[1], rec)
		}
		for i, cell := range rec {
			if i == 9 {
				if cell != "" {
					x, err := strconv.ParseFloat(cell, 64)
					if err != nil {
						t.Fatalf("%s: value %q: %v", what, cell, err)
					}
					c.number(t, what+" "+rec[1]+"/"+rec[8], x)
				}
				continue
			}
			for _, n := range c.names {
				if cell == n || strings.Contains(cell, n+"/") {
					t.Errorf("%s for %s names %q (another team's): %v", what, c.team, n, rec)
				}
			}
		}
	}
}

// html checks a page's text, its style sheet and tags (chart coordinates) left out.
func (c leakCheck) html(t *testing.T, what, page string) {
	t.Helper()
	page = regexp.MustCompile(`(?s)<style>.*?</style>`).ReplaceAllString(page, " ")
	page = regexp.MustCompile(`(?s)<[^>]*>`).ReplaceAllString(page, " ")
	c.text(t, what, page)
}

func parquetRecords(t *testing.T, data []byte) [][]string {
	t.Helper()
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	cols := make([]int, len(CSVHeader))
	for i, name := range CSVHeader {
		l, ok := f.Schema().Lookup(name)
		if !ok {
			t.Fatalf("parquet: no column %s", name)
		}
		cols[i] = l.ColumnIndex
	}
	rows := make([]parquet.Row, f.NumRows())
	r := parquet.NewReader(f)
	defer r.Close()
	if n, _ := r.ReadRows(rows); int64(n) != f.NumRows() {
		t.Fatalf("parquet: read %d of %d rows", n, f.NumRows())
	}
	recs := [][]string{CSVHeader}
	for _, row := range rows {
		rec := make([]string, len(CSVHeader))
		for i, ci := range cols {
			v := row[ci]
			switch {
			case v.IsNull():
			case CSVHeader[i] == "value":
				rec[i] = num(v.Double())
			default:
				rec[i] = v.String()
			}
		}
		recs = append(recs, rec)
	}
	return recs
}

func csvRecords(t *testing.T, data []byte) [][]string {
	t.Helper()
	recs, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// checkFormat renders r in format and checks it with c.
func (c leakCheck) file(t *testing.T, what, format string, data []byte) {
	t.Helper()
	switch format {
	case FormatHTML:
		c.html(t, what, string(data))
	case FormatCSV:
		c.records(t, what, csvRecords(t, data))
	case FormatJSON:
		c.json(t, what, data)
	case FormatParquet:
		c.records(t, what, parquetRecords(t, data))
	default:
		t.Fatalf("no check for format %q", format)
	}
}

// slack checks the Slack summary's text and blocks.
func (c leakCheck) slack(t *testing.T, what string, r *Report) {
	t.Helper()
	c.text(t, what+" text", Summary(r))
	blocks, err := json.Marshal(summaryBlocks(r))
	if err != nil {
		t.Fatal(err)
	}
	c.json(t, what+" blocks", blocks)
}

// TestAttackTeamReportShowsNoOtherTeam: a report cut to a team (Scoped, as the
// console does for a team token and a schedule with teams does) renders, in
// every format and in its Slack summary, no other team's name and no fleet-wide
// figure — the hole was a team's CSV that carried other teams' output lines and
// the fleet's clusters, models, failures and capacity while its HTML hid them.
func TestAttackTeamReportShowsNoOtherTeam(t *testing.T) {
	fleet := goldenReport(t)
	for _, team := range []string{"vision", "nlp", "recsys"} {
		t.Run(team, func(t *testing.T) {
			c := newLeakCheck(t, fleet, team)
			r := Scoped(fleet, TeamScope(team))
			if len(r.Teams) != 1 || r.Teams[0].Team != team {
				t.Fatalf("%s's report has teams %v, want its own line", team, r.Teams)
			}
			for _, format := range Formats {
				var buf bytes.Buffer
				if err := Render(&buf, r, format); err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(buf.String(), team) && format != FormatParquet {
					t.Errorf("%s for %s does not name it: nothing was checked", format, team)
				}
				c.file(t, format, format, buf.Bytes())
			}
			c.slack(t, "slack", r)
		})
	}
}

// TestAttackTeamScheduleShowsNoOtherTeam: a schedule with teams writes every
// format and posts the Slack summary from the one report cut to its teams,
// built from the store (the runner's real path).
func TestAttackTeamScheduleShowsNoOtherTeam(t *testing.T) {
	s := loadFleet(t)
	fleet, err := Build(t.Context(), s, november(t))
	if err != nil {
		t.Fatal(err)
	}
	c := newLeakCheck(t, fleet, "vision")
	dir := t.TempDir()
	p := &capturePoster{}
	cfg := reports.DefaultConfig()
	cfg.Dir, cfg.Refresh = dir, false
	run, err := NewRunner(cfg, s, WithPoster(p))
	if err != nil {
		t.Fatal(err)
	}
	sc := reports.Schedule{Name: "vision", Cron: "0 8 1 * *", Period: "previous_month", Formats: Formats, SlackChannel: "C0VISION", Teams: []string{"vision"}}
	if err := sc.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := run.Run(t.Context(), sc, november(t), time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, format := range Formats {
		path := filepath.Join(dir, FileName("vision", "2026-11", format))
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		c.file(t, filepath.Base(path), format, data)
	}
	if p.report == nil || p.report.Scope == nil {
		t.Fatalf("the Slack summary was not posted from the scoped report: %+v", p.report)
	}
	c.slack(t, "slack", p.report)
}

type capturePoster struct{ report *Report }

func (p *capturePoster) Post(_ context.Context, _ string, r *Report, _ []string) error {
	p.report = r
	return nil
}

// TestFleetScopeLosesNothing: the fleet scope (admin, operator, finance, a
// schedule without teams) is the report itself, every section and figure kept,
// rendered exactly as before.
func TestFleetScopeLosesNothing(t *testing.T) {
	fleet := goldenReport(t)
	if got := Scoped(fleet, FleetScope()); got != fleet {
		t.Fatal("the fleet scope changed the report")
	}
	if sc := ScheduleScope(reports.Schedule{Name: "all"}); !sc.All() {
		t.Error("a schedule without teams is not the fleet's report")
	}
	var buf bytes.Buffer
	if err := WriteCSV(&buf, Scoped(fleet, FleetScope())); err != nil {
		t.Fatal(err)
	}
	compareGolden(t, filepath.Join("testdata", "chargeback-2026-11.csv.golden"), buf.Bytes())
	sections := map[string]bool{}
	for _, rec := range csvRecords(t, buf.Bytes()) {
		sections[rec[1]] = true
	}
	for _, s := range []string{"total", "team", "card", "cluster", "model", "unallocated", "failures", "output", "idle_trend", "utilisation"} {
		if !sections[s] {
			t.Errorf("the fleet's CSV lost section %q", s)
		}
	}
	var pq bytes.Buffer
	if err := WriteParquet(&pq, fleet); err != nil {
		t.Fatal(err)
	}
	if got, want := parquetRecords(t, pq.Bytes()), csvRecords(t, buf.Bytes()); len(got) != len(want) {
		t.Errorf("the fleet's Parquet has %d records, its CSV %d", len(got), len(want))
	}
}

// TestScopedTotals: a team's totals are its own lines' sums, and the report it
// was cut from is left as it was (the console caches it for every viewer).
func TestScopedTotals(t *testing.T) {
	fleet := goldenReport(t)
	before, _ := json.Marshal(fleet)
	r := Scoped(fleet, TeamScope("vision", "recsys"))
	if after, _ := json.Marshal(fleet); !bytes.Equal(before, after) {
		t.Error("Scoped changed the report it was given")
	}
	if r.Totals.Cost == nil || !near(*r.Totals.Cost, 16.8+9.6) || !near(r.Totals.GPUHours, 16) || r.Totals.Jobs == 0 {
		t.Errorf("vision+recsys totals %+v, want 26.4 USD and 16 GPU-hours", r.Totals.Figures)
	}
	if r.Totals.UnallocatedGPUHours != 0 || r.Totals.UnallocatedCost != nil || r.EndedAttempts != 0 {
		t.Errorf("a team's report carries fleet figures: %+v, ended %d", r.Totals, r.EndedAttempts)
	}
	if r.Scope == nil || !slices.Equal(r.Scope.Teams, []string{"vision", "recsys"}) {
		t.Errorf("scope %+v", r.Scope)
	}
	if none := Scoped(fleet, Scope{}); len(none.Teams) != 0 || len(none.Projects) != 0 || none.Totals.GPUHours != 0 {
		t.Errorf("the zero scope sees %v", none.Teams)
	}
}
