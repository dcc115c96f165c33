package console

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/gpupool/gpupool/analyzer/capacity"
	"github.com/gpupool/gpupool/reports/billing"
)

// TestCapacityAgreesWithReport: for the same store and hour, the console's
// capacity page shows the figures of the report's capacity page
// (billing.BuildCapacity, what `gpupool report run` puts in its report) and of
// `gpupool capacity -f json` with the report's horizon and history
// (capacity.Report): per cluster and card type the inventory, demand, forecast,
// peak, trend, both WAPEs, the forecast used, the p95 wait, the plan and its
// cost, each as the page formats it; and the same cluster and card types
// named as too little history. A team's reader sees the same table: its
// figures are fleet-wide and name no team.
func TestCapacityAgreesWithReport(t *testing.T) {
	hs, at := newHistoryStore(t)
	page, err := billing.BuildCapacity(t.Context(), hs, at)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Cards) < 4 || len(page.Skipped) != 1 {
		t.Fatalf("the report's page: %d cards, skipped %v; want the fixture's four and one", len(page.Cards), page.Skipped)
	}
	var out bytes.Buffer
	req := capacity.Request{Options: capacity.Options{Weeks: page.HorizonWeeks, TargetP95: time.Duration(page.TargetP95Hours * float64(time.Hour)),
		MaxExtraGPUs: 512}, HistoryWeeks: page.HistoryWeeks, Now: at, Format: "json"}
	if err := capacity.Report(t.Context(), hs, &out, req); err != nil {
		t.Fatal(err)
	}
	var cli struct {
		Results []capacity.Result `json:"results"`
		Short   []capacity.Short  `json:"too_little_history"`
	}
	if err := json.Unmarshal(out.Bytes(), &cli); err != nil {
		t.Fatalf("gpupool capacity -f json: %v\n%s", err, out.String())
	}
	srv := testConsole(t, hs, nil)
	code, body, _ := get(t, srv, "/capacity", "tok-admin")
	if code != http.StatusOK {
		t.Fatalf("/capacity: %d", code)
	}
	rows := capacityRows(t, body)
	if len(rows) != len(page.Cards) || len(cli.Results) != len(page.Cards) {
		t.Errorf("the console shows %d rows, the report %d cards, gpupool capacity %d results", len(rows), len(page.Cards), len(cli.Results))
	}
	for i, c := range page.Cards {
		key := c.Cluster + "/" + c.Card
		if i < len(cli.Results) {
			compareCapacityCLI(t, c, cli.Results[i])
		}
		got, ok := rows[key]
		if !ok {
			t.Errorf("%s: the report has it, the console does not", key)
			continue
		}
		for cell, want := range capacityCells(c) {
			if g := got[cell]; g != want {
				t.Errorf("%s %s: the console shows %q, the report computes %q", key, cell, g, want)
			}
		}
	}
	if len(cli.Short) != len(page.Skipped) {
		t.Errorf("too little history: gpupool capacity names %d, the report %v", len(cli.Short), page.Skipped)
	}
	for i, s := range cli.Short {
		if i < len(page.Skipped) && s.Cluster+"/"+s.Card != page.Skipped[i] {
			t.Errorf("too little history #%d: gpupool capacity %s/%s, the report %s", i, s.Cluster, s.Card, page.Skipped[i])
		}
	}
	code, vbody, _ := get(t, srv, "/capacity", "tok-vision")
	if code != http.StatusOK || tableHTML(vbody, "capacity") != tableHTML(body, "capacity") {
		t.Errorf("team:vision's capacity page (%d) shows another table than the admin's", code)
	}
}

// capacityCells is the report's card as the console's page formats it, by
// the cell's class.
func capacityCells(c billing.CapacityCard) map[string]string {
	f2 := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
	opt := func(v *float64, scale float64, prec int, unit string) string {
		if v == nil {
			return "–"
		}
		return strconv.FormatFloat(*v*scale, 'f', prec, 64) + unit
	}
	extra := "+" + strconv.Itoa(c.ExtraGPUs)
	if !c.Reached {
		extra = "more than " + extra
	}
	cost := "–"
	if c.CostPerMonth != nil {
		cost = f2(*c.CostPerMonth) + " " + c.Currency
	}
	return map[string]string{
		"whole": strconv.Itoa(c.Inventory.Whole), "slices": strconv.Itoa(c.Inventory.Slices()), "gpu-eq": f2(c.CapacityGPUs),
		"demand": f2(c.DemandGPUs), "forecast": f2(c.ForecastDemandGPUs), "peak": f2(c.ForecastPeakGPUs), "trend": f2(c.TrendGPUsPerWeek),
		"wape": opt(c.WAPE, 100, 1, " %"), "naive-wape": opt(c.NaiveWAPE, 100, 1, " %"), "method": c.Method,
		"p95": opt(c.P95WaitHours, 1, 2, ""), "extra": extra, "cost": cost,
	}
}

// compareCapacityCLI checks the report's card against `gpupool capacity`'s
// result for the same cluster and card type (the report rounds to 0.001).
func compareCapacityCLI(t *testing.T, c billing.CapacityCard, r capacity.Result) {
	t.Helper()
	key := c.Cluster + "/" + c.Card
	if r.Cluster != c.Cluster || r.Card != c.Card {
		t.Errorf("%s: gpupool capacity has %s/%s in its place", key, r.Cluster, r.Card)
		return
	}
	near := func(what string, a float64, b *float64) {
		t.Helper()
		if b == nil || math.Abs(a-*b) > 0.0005 {
			t.Errorf("%s %s: gpupool capacity %v, the report %v", key, what, a, b)
		}
	}
	for what, v := range map[string][2]float64{
		"capacity": {r.CapacityGPUs, c.CapacityGPUs}, "demand": {r.DemandGPUs, c.DemandGPUs},
		"forecast": {r.ForecastDemandGPUs, c.ForecastDemandGPUs}, "peak": {r.ForecastPeakGPUs, c.ForecastPeakGPUs},
		"trend": {r.TrendGPUsPerWeek, c.TrendGPUsPerWeek},
	} {
		near(what, v[0], &v[1])
	}
	near("WAPE", r.Backtest.WAPE, c.WAPE)
	near("naive WAPE", r.Backtest.NaiveWAPE, c.NaiveWAPE)
	near("p95 wait", r.Plan.P95Hours, c.P95WaitHours)
	if (r.Plan.CostPerMonth == nil) != (c.CostPerMonth == nil) || (c.CostPerMonth != nil && math.Abs(*r.Plan.CostPerMonth-*c.CostPerMonth) > 0.005) {
		t.Errorf("%s cost a month: gpupool capacity %v, the report %v", key, r.Plan.CostPerMonth, c.CostPerMonth)
	}
	if r.Method != c.Method || r.Plan.ExtraGPUs != c.ExtraGPUs || r.Plan.Reached != c.Reached || r.Plan.Why != c.Why ||
		r.Plan.Basis != c.Basis || r.Inventory.String() != c.Inventory.String() {
		t.Errorf("%s: gpupool capacity %s, +%d (%v, %s: %s), %s; the report %s, +%d (%v, %s: %s), %s", key,
			r.Method, r.Plan.ExtraGPUs, r.Plan.Reached, r.Plan.Basis, r.Plan.Why, r.Inventory,
			c.Method, c.ExtraGPUs, c.Reached, c.Basis, c.Why, c.Inventory)
	}
}
