package capacity

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gpupool/gpupool/analyzer/pricebook"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// fakeStore serves the capacity view from series, the inventory from mig (a
// card's units' MIG profiles) or else each series' most GPUs in an hour, and
// the price timeline from a single H100 price: the queries Report makes.
type fakeStore struct {
	series []Series
	mig    map[string][]string
}

// inventory is chargeback_hourly_current's units: each reported in its series' last hour with
// GPUs.
func (f fakeStore) inventory() *store.Result {
	res := &store.Result{Columns: []store.ColumnMeta{{Name: "gpu_uuid"}, {Name: "cluster"}, {Name: "card"}, {Name: "mig_profile"}, {Name: "last_hour"}}}
	for _, s := range f.series {
		_, end := s.span()
		if end == 0 {
			continue
		}
		last := s.Start.Add(time.Duration(end-1) * time.Hour)
		profiles := f.mig[s.Card]
		if profiles == nil {
			for range int(maxOf(s.Capacity)) {
				profiles = append(profiles, "")
			}
		}
		for i, p := range profiles {
			res.Rows = append(res.Rows, []any{fmt.Sprintf("GPU-%s-%s-%d", s.Cluster, s.Card, i), s.Cluster, s.Card, p, last})
		}
	}
	return res
}

func (f fakeStore) Query(_ context.Context, sql string, p store.Params) (*store.Result, error) {
	if strings.Contains(sql, "FROM price_timeline") {
		return &store.Result{
			Columns: []store.ColumnMeta{{Name: "card"}, {Name: "valid_from"}, {Name: "valid_to"}, {Name: "price"}, {Name: "currency"}},
			Rows:    [][]any{{"H100-80GB", time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2106, 2, 7, 6, 28, 15, 0, time.UTC), 4.0, "USD"}},
		}, nil
	}
	from, _ := time.Parse(time.DateTime, p["from"])
	if strings.Contains(sql, "FROM chargeback_hourly_current") {
		return f.inventory(), nil
	}
	res := &store.Result{Columns: []store.ColumnMeta{{Name: "cluster"}, {Name: "card"}, {Name: "hour"}, {Name: "capacity"}, {Name: "running"}, {Name: "queued"}}}
	for _, s := range f.series {
		for i := range s.Running {
			h := s.Start.Add(time.Duration(i) * time.Hour)
			if !h.Before(from) {
				res.Rows = append(res.Rows, []any{s.Cluster, s.Card, h, s.Capacity[i], s.Running[i], s.Queued[i]})
			}
		}
	}
	return res, nil
}

// busySeries is a cluster whose weekday afternoons queue more work than its GPUs
// run, with demand growing week by week.
func busySeries(cluster, card string, weeks int, gpus float64) Series {
	n := weeks * HoursPerWeek
	s := Series{Cluster: cluster, Card: card, Start: monday,
		Capacity: make([]float64, n), Running: make([]float64, n), Queued: make([]float64, n)}
	want := synthetic(n, gpus*0.4, 0.005)
	backlog := 0.0
	for i := range s.Capacity {
		s.Capacity[i] = gpus
		backlog += want[i]
		s.Running[i] = min(backlog, gpus)
		backlog -= s.Running[i]
		s.Queued[i] = backlog
	}
	return s
}

func TestReportGolden(t *testing.T) {
	q := fakeStore{series: []Series{busySeries("eu-west-b", "H100-80GB", 6, 32), busySeries("eu-west-b", "L40S-48GB", 6, 24)}}
	now := monday.Add(6 * HoursPerWeek * time.Hour)
	var buf bytes.Buffer
	req := Request{Options: Options{Weeks: 8, TargetP95: time.Hour, MaxExtraGPUs: 512}, HistoryWeeks: 6, Now: now}
	if err := Report(t.Context(), q, &buf, req); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "report.txt")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./analyzer/capacity -run TestReportGolden -update)", err)
	}
	if buf.String() != string(want) {
		t.Errorf("report differs from %s (-update if intended):\n%s", path, buf.String())
	}
	// The H100s are priced: the plan's cost is its GPUs at 4 USD for 730 hours; the
	// L40S are not: no cost, never 0.
	res, err := Analyze(t.Context(), nil, nil, now, req.Options)
	if err != nil || len(res) != 0 {
		t.Fatalf("no series: %v, %v", res, err)
	}
	series, err := LoadHistory(t.Context(), q, monday, now)
	if err != nil {
		t.Fatal(err)
	}
	res, err = Analyze(t.Context(), pricebook.New(q), series, now, req.Options)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		switch r.Card {
		case "H100-80GB":
			if r.Plan.CostPerMonth == nil || *r.Plan.CostPerMonth != float64(r.Plan.ExtraGPUs)*4*HoursPerMonth || !r.Plan.Reached || r.Plan.ExtraGPUs == 0 {
				t.Errorf("H100 plan %+v: want extra GPUs priced at 4 USD × 730 h", r.Plan)
			}
		case "L40S-48GB":
			if r.Plan.CostPerMonth != nil {
				t.Errorf("L40S plan cost %v: the card has no price", *r.Plan.CostPerMonth)
			}
		}
	}
	if err := Report(t.Context(), q, &buf, Request{Options: req.Options, HistoryWeeks: 2, Now: now}); err == nil {
		t.Error("two weeks of history accepted")
	}
	if err := Report(t.Context(), q, &buf, Request{Options: Options{Weeks: 13}, HistoryWeeks: 6, Now: now}); err == nil {
		t.Error("a 13-week horizon accepted")
	}
}

// flatSeries is weeks of one cluster's gpus cards all running, with queued
// GPUs waiting every hour: demand is gpus + queued.
func flatSeries(cluster, card string, weeks int, gpus, queued float64) Series {
	n := weeks * HoursPerWeek
	s := Series{Cluster: cluster, Card: card, Start: monday,
		Capacity: make([]float64, n), Running: make([]float64, n), Queued: make([]float64, n)}
	for i := range s.Capacity {
		s.Capacity[i], s.Running[i] = gpus, gpus
		s.Queued[i] = queued + float64(i%HoursPerWeek%24)/23*gpus // a daily swing, the same every week
	}
	return s
}

// A day of data (the demo's store) is too little to forecast: the command says
// so, with the GPUs there, and prints no figures.
func TestReportShortHistory(t *testing.T) {
	day := flatSeries("eu-west-b", "H100-80GB", 1, 8, 4)
	day.Capacity, day.Running, day.Queued = day.Capacity[:24], day.Running[:24], day.Queued[:24]
	day.Start = monday.Add(7 * HoursPerWeek * time.Hour)
	now := day.Start.Add(24 * time.Hour)
	var buf bytes.Buffer
	req := Request{Options: Options{Weeks: 4, TargetP95: time.Hour, MaxExtraGPUs: 64}, HistoryWeeks: 8, Now: now}
	if err := Report(t.Context(), fakeStore{series: []Series{day}}, &buf, req); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"Too little history", "eu-west-b/H100-80GB: 1.0 days of history (24 hours", "8 GPUs", "needs 21 days"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, bad := range []string{"WAPE", "+GPUs", "1.1"} {
		if strings.Contains(out, bad) {
			t.Errorf("output has %q, a figure from too little history:\n%s", bad, out)
		}
	}
}

// Demand at 3 to 5 times the GPUs there (a queue that never drains) needs at
// least the GPUs that serve the standing queue, said in one line; the queue
// model alone sees no new work per hour and would ask for none.
func TestRecommendDemandAboveCapacity(t *testing.T) {
	s := flatSeries("eu-west-b", "H100-80GB", 4, 8, 16) // demand 24 to 32 GPUs on 8
	s.Inventory = schemas.Units{Whole: 8, GPUEquivalents: 8}
	res, err := Analyze(t.Context(), pricebook.New(fakeStore{}), []Series{s}, monday.Add(4*HoursPerWeek*time.Hour), Options{Weeks: 4, TargetP95: time.Hour, MaxExtraGPUs: 512})
	if err != nil || len(res) != 1 {
		t.Fatalf("%v, %v", res, err)
	}
	p := res[0].Plan
	// 16 GPUs wait in every hour on top of the 8 running: 16 more at the least.
	if d := res[0].ForecastDemandGPUs; d < 3*8 || d > 5*8 || p.ExtraGPUs < 16 || p.Basis != BasisQueue || !p.Reached {
		t.Errorf("demand %.1f on 8 GPUs: plan %+v, want at least 16 more on the standing queue's basis", d, p)
	}
	if p.Why == "" || strings.Contains(p.Why, "\n") {
		t.Errorf("why %q: want one line", p.Why)
	}
	// Within capacity: nothing to add, and said.
	s = flatSeries("eu-west-b", "H100-80GB", 4, 8, 0)
	for i := range s.Capacity {
		s.Capacity[i], s.Running[i], s.Queued[i] = 16, 8, 0
	}
	s.Inventory = schemas.Units{Whole: 16, GPUEquivalents: 16}
	res, err = Analyze(t.Context(), pricebook.New(fakeStore{}), []Series{s}, monday.Add(4*HoursPerWeek*time.Hour), Options{Weeks: 4, TargetP95: time.Hour, MaxExtraGPUs: 512})
	if err != nil || len(res) != 1 || res[0].Plan.ExtraGPUs != 0 || !strings.Contains(res[0].Plan.Why, "nothing to add") {
		t.Errorf("8 of 16 GPUs busy: %+v, %v: want nothing to add", res, err)
	}
}

// The forecast used is the one with the lower backtest error: a week that
// repeats exactly is the naive forecast's (WAPE 0); a growing one the model's.
func TestNaiveUsedWhereItWins(t *testing.T) {
	repeat := flatSeries("a", "H100-80GB", 4, 8, 2)
	repeat.Inventory = schemas.Units{Whole: 8, GPUEquivalents: 8}
	grow := busySeries("b", "H100-80GB", 4, 64)
	for i := range grow.Running {
		grow.Running[i] += 0.05 * float64(i) // a steady trend the naive forecast lags a week behind
		grow.Capacity[i] = 64 + 0.05*float64(i)
	}
	grow.Inventory = schemas.Units{Whole: 64, GPUEquivalents: 64}
	res, err := Analyze(t.Context(), pricebook.New(fakeStore{}), []Series{repeat, grow}, monday.Add(4*HoursPerWeek*time.Hour), Options{Weeks: 4, TargetP95: time.Hour, MaxExtraGPUs: 512})
	if err != nil || len(res) != 2 {
		t.Fatalf("%v, %v", res, err)
	}
	if r := res[0]; r.Method != MethodNaive || r.Backtest.NaiveWAPE != 0 || r.TrendGPUsPerWeek != 0 {
		t.Errorf("a repeating week: method %s, backtest %+v, trend %v: want naive, WAPE 0, no trend", r.Method, r.Backtest, r.TrendGPUsPerWeek)
	}
	if r := res[1]; r.Method != MethodModel || !(r.Backtest.WAPE < r.Backtest.NaiveWAPE) {
		t.Errorf("a growing week: method %s, backtest %+v: want the model, beating naive", r.Method, r.Backtest)
	}
	var buf bytes.Buffer
	if err := WriteTable(&buf, res, Options{Weeks: 4, TargetP95: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "naive") || !strings.Contains(buf.String(), MethodModel) {
		t.Errorf("the table does not say which forecast each row uses:\n%s", buf.String())
	}
}

// Capacity is the inventory: MIG slices are counted as slices and weigh their
// compute share, never as whole cards; a card type jobs asked for that no GPU
// reported gets no row.
func TestInventoryCapacity(t *testing.T) {
	a100 := flatSeries("eu-west-b", "A100-40GB", 4, 2, 0) // the view's GPU-equivalents: 16 slices of 1/7 = 2.3
	nothing := flatSeries("eu-west-b", "B200-192GB", 4, 0, 0)
	for i := range nothing.Queued {
		nothing.Queued[i] = 4 // asked for, never there
	}
	profiles := make([]string, 16)
	for i := range profiles {
		profiles[i] = "1g.5gb"
	}
	q := fakeStore{series: []Series{a100, nothing}, mig: map[string][]string{"A100-40GB": profiles}}
	now := monday.Add(4 * HoursPerWeek * time.Hour)
	var buf bytes.Buffer
	if err := Report(t.Context(), q, &buf, Request{Options: Options{Weeks: 4, TargetP95: time.Hour, MaxExtraGPUs: 64}, HistoryWeeks: 4, Now: now, Format: "json"}); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Results []Result `json:"results"`
		Short   []Short  `json:"too_little_history"`
	}
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Results) != 1 || got.Results[0].Card != "A100-40GB" {
		t.Fatalf("results %+v: want the A100 alone", got.Results)
	}
	r := got.Results[0]
	if r.Inventory.Whole != 0 || r.Inventory.MIG["1g.5gb"] != 16 || math.Abs(r.CapacityGPUs-16.0/7) > 1e-9 {
		t.Errorf("inventory %+v, capacity %v: want 16 slices of 1g.5gb weighing 16/7 GPUs", r.Inventory, r.CapacityGPUs)
	}
	if len(got.Short) != 1 || got.Short[0].Card != "B200-192GB" || !strings.Contains(got.Short[0].String(), "no GPU of it reported") {
		t.Errorf("short %+v: want the B200 named as asked for and absent", got.Short)
	}
}

// TestTableFits: the table, with the widest cells a large fleet gives (long
// names, four-digit GPU counts, MIG slices, a plan past its cap, a cost in
// millions), and its plan lines and legend keep within 140 columns.
func TestTableFits(t *testing.T) {
	cost := 12345678.0
	wide := Result{
		Cluster: "ap-southeast-1a", Card: "A100-SXM4-80GB",
		Inventory:    schemas.Units{Whole: 1024, MIG: map[string]int{"1g.10gb": 448}},
		CapacityGPUs: 1088.5, DemandGPUs: 1234.5, ForecastDemandGPUs: 2345.6, ForecastPeakGPUs: 9999.9, TrendGPUsPerWeek: -123.45,
		Backtest: Backtest{WAPE: 1.23, NaiveWAPE: 0.99}, Method: "naive",
		Plan: Plan{P95Hours: 999.75, ExtraGPUs: 4096, Basis: "mean demand", CostPerMonth: &cost, Currency: "USD",
			Why: "the forecast demand's mean, 2345.6 GPUs, is more than today's 1088.5 GPUs can serve at the efficiency the history kept (93%); +4096 bring it within"},
	}
	var buf bytes.Buffer
	if err := WriteTable(&buf, []Result{wide, wide}, Options{Weeks: 12, TargetP95: 90 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(buf.String(), "\n") {
		if n := utf8.RuneCountInString(line); n > maxWidth {
			t.Errorf("line %d is %d columns (at most %d): %s", i+1, n, maxWidth, line)
		}
	}
	if !strings.Contains(buf.String(), "Plan for a p95 wait ≤ 1h30m:") || !strings.Contains(buf.String(), "more than +4096 GPUs, 12345678 USD a month (mean demand)") {
		t.Errorf("table lacks its target or plan:\n%s", buf.String())
	}
}
