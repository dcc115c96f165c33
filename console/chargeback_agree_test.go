package console

import (
	"encoding/csv"
	"html"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/reports"
	"github.com/gpupool/gpupool/reports/billing"
)

// TestChargebackPageAgreesWithReport: for the day, week and month the fixture
// holds, the console's chargeback page shows, as it rounds them, the figures
// of the report billing.Build computes for the same store and period (what
// `gpupool report run` renders) and of the CSV the console serves: the fleet's
// totals (the cards), and every team, project and card type line (jobs,
// GPU-hours, used, idle, idle share, cost, idle cost, failed reruns, energy,
// change), for admin (the fleet) and for team:vision (the report cut to it).
// The page has no cluster or model breakdown (the report and the CSV do).
func TestChargebackPageAgreesWithReport(t *testing.T) {
	s := simStore(t)
	srv := testConsole(t, s, nil)
	for _, kind := range [][2]string{{"day", "2026-11-30"}, {"day", "2026-12-01"}, {"week", "2026-W49"}, {"month", "2026-11"}} {
		p, err := reports.ParsePeriod(kind[1], time.UTC)
		if err != nil {
			t.Fatal(err)
		}
		fleet, err := billing.Build(t.Context(), s, p)
		if err != nil {
			t.Fatal(err)
		}
		for tok, scope := range map[string]billing.Scope{"tok-admin": billing.FleetScope(), "tok-vision": billing.TeamScope("vision")} {
			r, what := billing.Scoped(fleet, scope), tok+" "+kind[1]
			q := "?period=" + kind[0] + "&at=" + kind[1]
			code, page, _ := get(t, srv, "/chargeback"+q+"&per=500", tok)
			ccode, body, _ := get(t, srv, "/chargeback.csv"+q, tok)
			if code != http.StatusOK || ccode != http.StatusOK || len(r.Teams) == 0 {
				t.Fatalf("%s: page %d, CSV %d, %d teams in the report", what, code, ccode, len(r.Teams))
			}
			fromCSV, cur := csvFigures(t, body)
			if cur != r.Currency {
				t.Errorf("%s: the CSV's currency %q, the report's %q", what, cur, r.Currency)
			}
			tot := figuresOf(r.Totals.Figures, nil)
			tot["unallocated_gpu_hours"], tot["unallocated_cost"] = &r.Totals.UnallocatedGPUHours, r.Totals.UnallocatedCost
			want, csvCards := totalCards(tot, r.Currency, r.Scope == nil), totalCards(fromCSV["total|||"], cur, r.Scope == nil)
			got := totalsOnPage(page)
			if strings.Join(got, "; ") != strings.Join(want, "; ") || strings.Join(csvCards, "; ") != strings.Join(want, "; ") {
				t.Errorf("%s totals:\n page   %q\n report %q\n CSV    %q", what, got, want, csvCards)
			}
			for sec, lines := range map[string][]billing.Line{"team": r.Teams, "project": r.Projects, "card": r.Cards} {
				rows := lineRows(page, "by-"+sec)
				if len(rows) != len(lines) {
					t.Errorf("%s: the page's %s table has %d rows, the report %d lines", what, sec, len(rows), len(lines))
				}
				for _, l := range lines {
					key := map[string]string{"team": l.Team, "project": l.Team + "/" + l.Project, "card": l.Card}[sec]
					want := lineCells(figuresOf(l.Figures, l.CostChange), r.Currency)
					csvKey := strings.Join([]string{sec, l.Team, l.Project, l.Card + l.Cluster + l.Model}, "|")
					fromC := lineCells(fromCSV[csvKey], cur)
					if g := strings.Join(rows[key], "; "); g != strings.Join(want, "; ") || strings.Join(fromC, "; ") != g {
						t.Errorf("%s %s %q:\n page   %s\n report %s\n CSV    %s", what, sec, key, g, strings.Join(want, "; "), strings.Join(fromC, "; "))
					}
				}
			}
		}
	}
}

// figuresOf is a report's figures by the CSV's metric names.
func figuresOf(f billing.Figures, change *float64) map[string]*float64 {
	v := func(x float64) *float64 { return &x }
	return map[string]*float64{"jobs": v(float64(f.Jobs)), "gpu_hours": v(f.GPUHours), "used_gpu_hours": v(f.UsedGPUHours),
		"idle_gpu_hours": v(f.IdleGPUHours), "idle_ratio": v(f.IdleRatio()), "cost": f.Cost, "idle_cost": f.IdleCost,
		"failed_rerun_gpu_hours": v(f.FailedRerunGPUHours), "failed_rerun_cost": f.FailedRerunCost,
		"queue_wait_hours": v(f.QueueWaitHours), "energy_kwh": v(f.EnergyKWh), "cost_change": change}
}

// csvFigures is the CSV's figures by section|team|project|card+bucket, then
// metric (nil: an empty value, unpriced), and its currency.
func csvFigures(t *testing.T, body string) (map[string]map[string]*float64, string) {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil || len(recs) < 2 {
		t.Fatalf("CSV: %v, %d records", err, len(recs))
	}
	out, cur := map[string]map[string]*float64{}, ""
	for _, rec := range recs[1:] {
		key := strings.Join([]string{rec[1], rec[2], rec[3], rec[5] + rec[7]}, "|")
		if rec[1] == "total" || rec[1] == "previous_total" || rec[1] == "change" {
			key = rec[1] + "|||"
		}
		if out[key] == nil {
			out[key] = map[string]*float64{}
		}
		out[key][rec[8]] = nil
		if x, err := strconv.ParseFloat(rec[9], 64); err == nil {
			out[key][rec[8]] = &x
		}
		if rec[8] == "cost" {
			cur = rec[10]
		}
	}
	return out, cur
}

// The page's formats: two decimals, whole percents, money with its currency.
func f2(v *float64) string {
	if v == nil {
		return "missing"
	}
	return strconv.FormatFloat(*v, 'f', 2, 64)
}

func pct0(v *float64) string {
	if v == nil {
		return "missing"
	}
	return strconv.FormatFloat(*v*100, 'f', 0, 64) + " %"
}

// money2 is an amount as the report states it: unpriced, or the figure in its
// currency (none when nothing was billed: a period with no jobs of its own).
func money2(v *float64, cur string) string {
	if v == nil {
		return "unpriced"
	}
	return strings.TrimSpace(f2(v) + " " + cur)
}

// lineCells is a line as the page's breakdowns show it, name left out.
func lineCells(m map[string]*float64, cur string) []string {
	change := "–"
	if m["cost_change"] != nil {
		change = pct0(m["cost_change"])
	}
	return []string{strings.TrimSuffix(f2(m["jobs"]), ".00"), f2(m["gpu_hours"]), f2(m["used_gpu_hours"]), f2(m["idle_gpu_hours"]),
		pct0(m["idle_ratio"]), money2(m["cost"], cur), money2(m["idle_cost"], cur), money2(m["failed_rerun_cost"], cur), f2(m["energy_kwh"]), change}
}

// totalCards is the totals as the page's cards show them.
func totalCards(m map[string]*float64, cur string, fleet bool) []string {
	out := []string{money2(m["cost"], cur) + " cost", f2(m["gpu_hours"]) + " GPU-hours (" + strings.TrimSuffix(f2(m["jobs"]), ".00") + " jobs)",
		f2(m["idle_gpu_hours"]) + " idle GPU-hours, " + money2(m["idle_cost"], cur),
		f2(m["failed_rerun_gpu_hours"]) + " GPU-h of failed reruns, " + money2(m["failed_rerun_cost"], cur),
		f2(m["queue_wait_hours"]) + " hours of queue wait", f2(m["energy_kwh"]) + " kWh"}
	if fleet {
		out = append(out, f2(m["unallocated_gpu_hours"])+" unallocated GPU-h, "+money2(m["unallocated_cost"], cur))
	}
	return out
}

var (
	statRe    = regexp.MustCompile(`(?s)<div class="stat[^"]*">(.*?)</div>`)
	lineRowRe = regexp.MustCompile(`(?s)<tr data-key="([^"]*)">(.*?)</tr>`)
)

func cellText(s string) string {
	return strings.Join(strings.Fields(html.UnescapeString(tagRe.ReplaceAllString(s, ""))), " ")
}

// totalsOnPage is the text of the page's total cards.
func totalsOnPage(page string) []string {
	_, cards, _ := strings.Cut(page, `id="totals"`)
	cards, _, _ = strings.Cut(cards, `<div class="charts">`)
	var out []string
	for _, m := range statRe.FindAllStringSubmatch(cards, -1) {
		out = append(out, cellText(m[1]))
	}
	return out
}

// lineRows is a breakdown table's cells by the row's key, name left out.
func lineRows(page, id string) map[string][]string {
	out := map[string][]string{}
	for _, m := range lineRowRe.FindAllStringSubmatch(tableHTML(page, id), -1) {
		var cells []string
		for _, td := range tdRe.FindAllStringSubmatch(m[2], -1)[1:] {
			cells = append(cells, cellText(td[1]))
		}
		out[html.UnescapeString(m[1])] = cells
	}
	return out
}
