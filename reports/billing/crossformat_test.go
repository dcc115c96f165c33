package billing

import (
	"bytes"
	"encoding/csv"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gpupool/gpupool/store"
)

// TestFormatsAgree: for the same period, each team's GPU-hours and cost are
// computed once (Build) and read back equal from the HTML report, the CSV and
// `gpupool sql` over the finance view (chargeback_daily). The console's side is
// left to its own test (console/chargeback, a later step).
func TestFormatsAgree(t *testing.T) {
	s := loadFleet(t)
	r, err := Build(t.Context(), s, november(t))
	if err != nil {
		t.Fatal(err)
	}
	type fig struct{ gpuHours, cost float64 }
	want := map[string]fig{}
	for _, l := range r.Teams {
		if l.Cost == nil {
			t.Fatalf("team %s unpriced in the fixture", l.Team)
		}
		want[l.Team] = fig{l.GPUHours, *l.Cost}
	}
	if len(want) < 3 {
		t.Fatalf("teams %v: want the fixture's three", want)
	}
	compare := func(format string, got map[string]fig) {
		t.Helper()
		for team, w := range want {
			g, ok := got[team]
			if !ok || math.Abs(g.gpuHours-w.gpuHours) > 0.01 || math.Abs(g.cost-w.cost) > 0.01 {
				t.Errorf("%s: team %s %+v, the report computes %+v", format, team, g, w)
			}
		}
	}

	var csvBuf bytes.Buffer
	if err := WriteCSV(&csvBuf, r); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&csvBuf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	fromCSV := map[string]fig{}
	for _, rec := range recs[1:] {
		if rec[1] != "team" || rec[3] != "" || rec[5] != "" {
			continue
		}
		v, _ := strconv.ParseFloat(rec[9], 64)
		f := fromCSV[rec[2]]
		switch rec[8] {
		case "gpu_hours":
			f.gpuHours = v
		case "cost":
			f.cost = v
		}
		fromCSV[rec[2]] = f
	}
	compare("csv", fromCSV)

	var html bytes.Buffer
	if err := WriteHTML(&html, r); err != nil {
		t.Fatal(err)
	}
	// The team table: team, jobs, GPU-h, used, idle, cost, …
	cell := `<td class="n">([^<]*)</td>`
	row := regexp.MustCompile(`<tr><td>([^<]+)</td>` + cell + cell + cell + cell + cell)
	fromHTML := map[string]fig{}
	for _, m := range row.FindAllStringSubmatch(html.String(), -1) {
		if _, ok := want[m[1]]; !ok {
			continue
		}
		h, err1 := strconv.ParseFloat(strings.ReplaceAll(m[3], ",", ""), 64)
		c, err2 := strconv.ParseFloat(strings.ReplaceAll(m[6], ",", ""), 64)
		if err1 == nil && err2 == nil {
			if _, seen := fromHTML[m[1]]; !seen {
				fromHTML[m[1]] = fig{h, c}
			}
		}
	}
	compare("html", fromHTML)

	res, err := s.Query(t.Context(), `SELECT team, sum(gpu_hours) AS gpu_hours, sum(cost) AS cost FROM chargeback_daily
WHERE day >= toDate({from:DateTime64(3, 'UTC')}) AND day < toDate({to:DateTime64(3, 'UTC')}) GROUP BY team`,
		store.Params{"from": november(t).From.Format("2006-01-02 15:04:05.000"), "to": november(t).To.Format("2006-01-02 15:04:05.000")})
	if err != nil {
		t.Fatal(err)
	}
	fromSQL := map[string]fig{}
	for i := range res.Rows {
		team, _ := res.String(i, "team")
		h, _ := res.Float(i, "gpu_hours")
		c, _ := res.Float(i, "cost")
		fromSQL[team] = fig{h, c}
	}
	compare("sql", fromSQL)
}
