package capacity

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/analyzer/chargeback"
	"github.com/gpupool/gpupool/store"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// fakeStore serves the capacity view from series and the price timeline from a
// single H100 price: the two queries Report makes.
type fakeStore struct{ series []Series }

func (f fakeStore) Query(_ context.Context, sql string, p store.Params) (*store.Result, error) {
	if strings.Contains(sql, "FROM price_timeline") {
		return &store.Result{
			Columns: []store.ColumnMeta{{Name: "card"}, {Name: "valid_from"}, {Name: "valid_to"}, {Name: "price"}, {Name: "currency"}},
			Rows:    [][]any{{"H100-80GB", time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2106, 2, 7, 6, 28, 15, 0, time.UTC), 4.0, "USD"}},
		}, nil
	}
	res := &store.Result{Columns: []store.ColumnMeta{{Name: "cluster"}, {Name: "card"}, {Name: "hour"}, {Name: "capacity"}, {Name: "running"}, {Name: "queued"}}}
	from, _ := time.Parse(time.DateTime, p["from"])
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
	res, err = Analyze(t.Context(), chargeback.NewPriceBook(q), series, now, req.Options)
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
