package console

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/gpupool/gpupool/reports/billing"
)

// exportPaths are the chargeback's page and downloads, for one period.
var exportPaths = []string{"/chargeback", "/chargeback.csv", "/chargeback.json", "/chargeback.parquet"}

// fleetReport is the period's report as admin downloads it (the fleet's).
func fleetReport(t *testing.T, get func(path, tok string) (int, string)) *billing.Report {
	t.Helper()
	code, body := get("/chargeback.json?period=day&at=2026-11-30", "tok-admin")
	if code != http.StatusOK {
		t.Fatalf("admin JSON: %d %.300s", code, body)
	}
	var r billing.Report
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// TestAttackTeamChargebackExports: with a team's real token, the console's
// chargeback page and every download of it (CSV, JSON, Parquet) name no other
// team (nor its jobs, projects or models) and show no fleet-wide figure (the
// fleet's totals, other teams' costs) — the hole was a team's CSV that carried
// other teams' output lines and the fleet's clusters, models, failures and
// capacity, which the page and the Parquet file hid.
func TestAttackTeamChargebackExports(t *testing.T) {
	srv := testConsole(t, simStore(t), nil)
	fetch := func(path, tok string) (int, string) {
		code, body, _ := get(t, srv, path, tok)
		return code, body
	}
	fleet := fleetReport(t, fetch)

	const team = "vision"
	var names []string
	var figures, own []float64
	note := func(owner string, n []string, f ...float64) {
		if owner == team {
			own = append(own, f...)
			return
		}
		for _, x := range n {
			if x != "" && !slices.Contains(names, x) {
				names = append(names, x)
			}
		}
		figures = append(figures, f...)
	}
	for _, l := range fleet.Teams {
		note(l.Team, []string{l.Team}, opt0(l.Cost), l.GPUHours, opt0(l.IdleCost), l.IdleGPUHours)
	}
	for _, l := range fleet.Projects {
		note(l.Team, nil, opt0(l.Cost), l.GPUHours)
	}
	for _, w := range fleet.TopWaste {
		note(w.Team, []string{w.Team, w.Job}, w.IdleGPUHours)
	}
	for _, f := range fleet.Findings {
		note(f.Team, []string{f.Team, f.Job})
	}
	for _, o := range fleet.Output {
		note(o.Team, []string{o.Team}, o.GPUHours)
	}
	figures = append(figures, opt0(fleet.Totals.Cost), fleet.Totals.GPUHours, opt0(fleet.Totals.IdleCost),
		fleet.Totals.IdleGPUHours, fleet.Totals.UnallocatedGPUHours, opt0(fleet.Totals.UnallocatedCost))
	var fleetFigures []float64
	for _, x := range figures {
		// Whole numbers under 100 are counts and hours everywhere; a figure that
		// is also the team's own may appear.
		if x != 0 && (x != math.Trunc(x) || x >= 100) && !slices.ContainsFunc(own, func(y float64) bool { return sameMoney(x, y) }) {
			fleetFigures = append(fleetFigures, x)
		}
	}
	if len(names) == 0 || len(fleetFigures) == 0 {
		t.Fatalf("the simulated fleet has nothing %s must not see (names %v, figures %v)", team, names, fleetFigures)
	}

	checkText := func(what, s string) {
		t.Helper()
		for _, n := range names {
			if regexp.MustCompile(`(^|[^A-Za-z0-9_-])` + regexp.QuoteMeta(n) + `($|[^A-Za-z0-9_-])`).MatchString(s) {
				t.Errorf("%s for %s names %q (another team's)", what, team, n)
			}
		}
		for _, tok := range regexp.MustCompile(`\d+(?:\.\d+)?`).FindAllString(s, -1) {
			for _, f := range fleetFigures {
				if printedAs(tok, f) {
					t.Errorf("%s for %s shows %s, a fleet-wide or another team's figure (%v)", what, team, tok, f)
				}
			}
		}
	}
	for _, period := range []string{"?period=day&at=2026-11-30", "?period=week&at=2026-W49", "?period=month&at=2026-11"} {
		for _, p := range exportPaths {
			path := p + period
			code, body := fetch(path, "tok-"+team)
			if code != http.StatusOK {
				t.Fatalf("%s as %s: %d %.300s", path, team, code, body)
			}
			switch {
			case strings.HasSuffix(p, ".csv"):
				recs, err := csv.NewReader(strings.NewReader(body)).ReadAll()
				if err != nil {
					t.Fatal(err)
				}
				for _, rec := range recs[1:] {
					if !slices.Contains([]string{"total", "previous_total", "change", "team", "project", "top_waste", "finding", "queue_wait", "output"}, rec[1]) {
						t.Errorf("%s for %s has the fleet-wide section %q", path, team, rec[1])
					}
				}
				checkText(path, body)
			case strings.HasSuffix(p, ".parquet"):
				for _, got := range parquetColumn(t, body, "team") {
					if got != team {
						t.Errorf("%s for %s has a row of team %q", path, team, got)
					}
				}
				for _, n := range names {
					if strings.Contains(body, n) {
						t.Errorf("%s for %s holds %q (another team's)", path, team, n)
					}
				}
			case strings.HasSuffix(p, ".json"):
				if !strings.Contains(body, `"scope"`) {
					t.Errorf("%s for %s does not say it is cut to the team", path, team)
				}
				checkText(path, body)
			default: // the page: its text, style and tags (chart coordinates) left out
				body = regexp.MustCompile(`(?s)<(style|script)[^>]*>.*?</(style|script)>`).ReplaceAllString(body, " ")
				checkText(path, regexp.MustCompile(`(?s)<[^>]*>`).ReplaceAllString(body, " "))
			}
			if p != "/chargeback.parquet" && !strings.Contains(body, team) && period == "?period=day&at=2026-11-30" {
				t.Errorf("%s for %s does not name it: nothing was checked", path, team)
			}
		}
	}
}

// TestChargebackExportsLoseNothing: admin and finance still download the
// fleet's report whole — every team, the fleet's totals and breakdowns — in the
// same figures as `gpupool report run` renders them.
func TestChargebackExportsLoseNothing(t *testing.T) {
	srv := testConsole(t, simStore(t), nil)
	fetch := func(path, tok string) (int, string) {
		code, body, _ := get(t, srv, path, tok)
		return code, body
	}
	fleet := fleetReport(t, fetch)
	if fleet.Scope != nil || len(fleet.Teams) < 2 || len(fleet.Cards) == 0 || len(fleet.Clusters) == 0 || len(fleet.Utilisation) == 0 {
		t.Fatalf("admin's report is not the fleet's: scope %v, %d teams, %d cards, %d clusters", fleet.Scope, len(fleet.Teams), len(fleet.Cards), len(fleet.Clusters))
	}
	var want bytes.Buffer
	if err := billing.WriteCSV(&want, fleet); err != nil {
		t.Fatal(err)
	}
	teams := map[string]bool{}
	for _, l := range fleet.Teams {
		teams[l.Team] = true
	}
	for _, tok := range []string{"tok-admin", "tok-finance"} {
		code, body := fetch("/chargeback.csv?period=day&at=2026-11-30", tok)
		if code != http.StatusOK || body != want.String() {
			t.Errorf("%s CSV: %d, %d bytes, want the fleet's %d bytes", tok, code, len(body), want.Len())
		}
		code, body = fetch("/chargeback.parquet?period=day&at=2026-11-30", tok)
		if code != http.StatusOK {
			t.Fatalf("%s parquet: %d", tok, code)
		}
		got := map[string]bool{}
		for _, team := range parquetColumn(t, body, "team") {
			got[team] = true
		}
		for team := range teams {
			if !got[team] {
				t.Errorf("%s parquet lost team %q", tok, team)
			}
		}
		code, body = fetch("/chargeback?period=day&at=2026-11-30", tok)
		if code != http.StatusOK || !strings.Contains(body, `id="by-card"`) {
			t.Errorf("%s page: %d, card breakdown shown %v", tok, code, strings.Contains(body, `id="by-card"`))
		}
	}
}

// parquetColumn is one text column of a Parquet file.
func parquetColumn(t *testing.T, data, name string) []string {
	t.Helper()
	f, err := parquet.OpenFile(strings.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	l, ok := f.Schema().Lookup(name)
	if !ok {
		t.Fatalf("parquet: no column %s", name)
	}
	rows := make([]parquet.Row, f.NumRows())
	r := parquet.NewReader(f)
	defer r.Close()
	if n, _ := r.ReadRows(rows); int64(n) != f.NumRows() {
		t.Fatalf("parquet: read %d of %d rows", n, f.NumRows())
	}
	var out []string
	for _, row := range rows {
		out = append(out, row[l.ColumnIndex].String())
	}
	return out
}

func opt0(v *float64) float64 {
	if v == nil {
		return 0
	}
	return *v
}

// printedAs reports whether tok is f as printed: in full, or with two decimals.
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

// sameMoney: equal, or equal as printed with two decimals.
func sameMoney(x, y float64) bool {
	return math.Abs(x-y) < 1e-9 || math.Abs(math.Round(x*100)/100-math.Round(y*100)/100) < 1e-9
}
