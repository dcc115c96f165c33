package billing

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/analyzer/capacity"
	"github.com/gpupool/gpupool/store"
)

// TestFormatsAgree: for the same period, each team's GPU-hours and cost are
// computed once (Build) and read back equal from the HTML report, the CSV and
// `gpupool sql` over the finance view (chargeback_daily). The console's side is
// left to its own test (console/chargeback, a later step); the capacity
// figures are TestCapacityFormatsAgree's.
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

// seriesStore serves the queries of billing.BuildCapacity and `gpupool
// capacity` from series: the capacity view's hours with GPUs, each series'
// most GPUs as whole GPUs reported in its last hour, and price's price book.
type seriesStore struct {
	series []capacity.Series
	price  onePrice
}

func (f seriesStore) Query(ctx context.Context, sql string, p store.Params) (*store.Result, error) {
	if strings.Contains(sql, "FROM price_timeline") {
		return f.price.Query(ctx, sql, p)
	}
	if strings.Contains(sql, "FROM chargeback_hourly_current") {
		res := &store.Result{Columns: []store.ColumnMeta{{Name: "gpu_uuid"}, {Name: "cluster"}, {Name: "card"}, {Name: "mig_profile"}, {Name: "last_hour"}}}
		for _, s := range f.series {
			last := s.Start.Add(time.Duration(len(s.Capacity)-1) * time.Hour)
			for i := range int(slices.Max(s.Capacity)) {
				res.Rows = append(res.Rows, []any{fmt.Sprintf("GPU-%s-%d", s.Card, i), s.Cluster, s.Card, "", last})
			}
		}
		return res, nil
	}
	from, _ := time.Parse(time.DateTime, p["from"])
	to, _ := time.Parse(time.DateTime, p["to"])
	res := &store.Result{Columns: []store.ColumnMeta{{Name: "cluster"}, {Name: "card"}, {Name: "hour"}, {Name: "capacity"}, {Name: "running"}, {Name: "queued"}}}
	for _, s := range f.series {
		for i := range s.Capacity {
			h := s.Start.Add(time.Duration(i) * time.Hour)
			if s.Capacity[i] > 0 && !h.Before(from) && h.Before(to) {
				res.Rows = append(res.Rows, []any{s.Cluster, s.Card, h, s.Capacity[i], s.Running[i], s.Queued[i]})
			}
		}
	}
	return res, nil
}

// TestCapacityFormatsAgree: the capacity figures are computed once
// (analyzer/capacity, through BuildCapacity) and read back equal from the
// report's CSV, from `gpupool capacity -f json` and from its terminal table
// and plan lines, with the report's horizon and history; both name the same
// cluster and card types as too little history. The console's page is
// checked against the same figures in console/capacity_agree_test.go.
func TestCapacityFormatsAgree(t *testing.T) {
	q := seriesStore{series: []capacity.Series{growingH100s(), sparseL40S()}, price: onePrice{"H100-80GB", 4}}
	now := capacityMonday.Add(8 * capacity.HoursPerWeek * time.Hour)
	page, err := BuildCapacity(t.Context(), q, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Cards) != 1 || len(page.Skipped) != 1 {
		t.Fatalf("cards %d, skipped %v: want the H100s forecast and the L40S skipped", len(page.Cards), page.Skipped)
	}
	c := page.Cards[0]
	want := map[string]float64{
		"whole_gpus": float64(c.Inventory.Whole), "mig_slices": float64(c.Inventory.Slices()), "capacity_gpus": c.CapacityGPUs,
		"demand_gpus": c.DemandGPUs, "forecast_demand_gpus": c.ForecastDemandGPUs, "forecast_peak_gpus": c.ForecastPeakGPUs,
		"forecast_capacity_gpus": c.ForecastCapacityGPUs, "trend_gpus_per_week": c.TrendGPUsPerWeek, "wape": *c.WAPE, "naive_wape": *c.NaiveWAPE, "p95_wait_hours": *c.P95WaitHours,
		"extra_gpus": float64(c.ExtraGPUs), "cost_per_month": *c.CostPerMonth,
	}

	var csvBuf bytes.Buffer
	if err := WriteCSV(&csvBuf, &Report{Period: PeriodInfo{Label: "2026-11"}, Capacity: page}); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&csvBuf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, rec := range recs[1:] {
		if rec[1] != "capacity" || rec[7] != c.Cluster || rec[5] != c.Card {
			continue
		}
		w, ok := want[rec[8]]
		if v, err := strconv.ParseFloat(rec[9], 64); !ok || err != nil || v != w {
			t.Errorf("csv: %s %s/%s = %s, the report computes %v", rec[8], c.Cluster, c.Card, rec[9], w)
		}
		seen++
	}
	if seen < len(want) {
		t.Errorf("csv: %d of the %d capacity figures", seen, len(want))
	}

	req := capacity.Request{Options: capacity.Options{Weeks: page.HorizonWeeks, TargetP95: time.Duration(page.TargetP95Hours * float64(time.Hour)), MaxExtraGPUs: 512},
		HistoryWeeks: page.HistoryWeeks, Now: now, Format: "json"}
	var js bytes.Buffer
	if err := capacity.Report(t.Context(), q, &js, req); err != nil {
		t.Fatal(err)
	}
	var cli struct {
		Results []capacity.Result `json:"results"`
		Short   []capacity.Short  `json:"too_little_history"`
	}
	if err := json.Unmarshal(js.Bytes(), &cli); err != nil || len(cli.Results) != 1 || len(cli.Short) != 1 {
		t.Fatalf("gpupool capacity -f json: %v, %d results, %d short\n%s", err, len(cli.Results), len(cli.Short), js.String())
	}
	r := cli.Results[0]
	got := map[string]float64{
		"whole_gpus": float64(r.Inventory.Whole), "mig_slices": float64(r.Inventory.Slices()), "capacity_gpus": r.CapacityGPUs,
		"demand_gpus": r.DemandGPUs, "forecast_demand_gpus": r.ForecastDemandGPUs, "forecast_peak_gpus": r.ForecastPeakGPUs,
		"forecast_capacity_gpus": r.ForecastCapacity, "trend_gpus_per_week": r.TrendGPUsPerWeek, "wape": r.Backtest.WAPE, "naive_wape": r.Backtest.NaiveWAPE, "p95_wait_hours": r.Plan.P95Hours,
		"extra_gpus": float64(r.Plan.ExtraGPUs), "cost_per_month": *r.Plan.CostPerMonth,
	}
	for k, w := range want {
		if math.Abs(got[k]-w) > 0.0005 {
			t.Errorf("gpupool capacity -f json: %s = %v, the report computes %v", k, got[k], w)
		}
	}
	if r.Method != c.Method || r.Plan.Why != c.Why || cli.Short[0].Cluster+"/"+cli.Short[0].Card != page.Skipped[0] {
		t.Errorf("gpupool capacity -f json: %s, %q, short %s/%s; the report %s, %q, skipped %v",
			r.Method, r.Plan.Why, cli.Short[0].Cluster, cli.Short[0].Card, c.Method, c.Why, page.Skipped)
	}

	req.Format = "table"
	var table bytes.Buffer
	if err := capacity.Report(t.Context(), q, &table, req); err != nil {
		t.Fatal(err)
	}
	// The row: cluster, card, the inventory (the terminal's own short form),
	// then the figures.
	row := fmt.Sprintf(" %.1f %.1f %.1f %.1f %+.2f ", c.CapacityGPUs, c.DemandGPUs, c.ForecastDemandGPUs, c.ForecastPeakGPUs, c.TrendGPUsPerWeek)
	found := false
	for _, line := range strings.Split(table.String(), "\n") {
		f := strings.Fields(line)
		if len(f) > 2 && f[0] == c.Cluster && f[1] == c.Card && strings.Contains(" "+strings.Join(f, " ")+" ", row) {
			found = true
		}
	}
	plan := fmt.Sprintf("%s/%s: +%d GPUs, %.0f %s a month (%s): ", c.Cluster, c.Card, c.ExtraGPUs, *c.CostPerMonth, c.Currency, c.Basis)
	if !found || !strings.Contains(table.String(), plan) || !strings.Contains(strings.Join(strings.Fields(table.String()), " "), c.Why) {
		t.Errorf("gpupool capacity: no row %s/%s with%q, or no plan line %q with its why %q:\n%s", c.Cluster, c.Card, row, plan, c.Why, table.String())
	}
	if !strings.Contains(table.String(), page.Skipped[0]+":") {
		t.Errorf("gpupool capacity does not name %s as too little history:\n%s", page.Skipped[0], table.String())
	}
}
