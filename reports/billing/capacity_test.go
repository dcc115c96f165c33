package billing

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/analyzer/capacity"
	"github.com/gpupool/gpupool/analyzer/pricebook"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
)

// onePrice is a price book of one card: the price_timeline query PriceBook makes.
type onePrice struct {
	card  string
	price float64
}

func (p onePrice) Query(_ context.Context, sql string, _ store.Params) (*store.Result, error) {
	return &store.Result{
		Columns: []store.ColumnMeta{{Name: "card"}, {Name: "valid_from"}, {Name: "valid_to"}, {Name: "price"}, {Name: "currency"}},
		Rows:    [][]any{{p.card, time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2106, 2, 7, 6, 28, 15, 0, time.UTC), p.price, "USD"}},
	}, nil
}

var capacityMonday = time.Date(2026, 10, 5, 0, 0, 0, 0, time.UTC)

// growingH100s is eight weeks of 16 H100s whose weekday working hours ask for
// more than they hold, a little more each week: the backlog queues and drains at
// night.
func growingH100s() capacity.Series {
	n := 8 * capacity.HoursPerWeek
	s := capacity.Series{Cluster: "eu-west", Card: "H100-80GB", Start: capacityMonday,
		Capacity: make([]float64, n), Running: make([]float64, n), Queued: make([]float64, n)}
	backlog := 0.0
	for i := range n {
		t := capacityMonday.Add(time.Duration(i) * time.Hour)
		want := 6 + 0.3*float64(i)/float64(capacity.HoursPerWeek)
		if t.Weekday() != time.Saturday && t.Weekday() != time.Sunday && t.Hour() >= 9 && t.Hour() < 18 {
			want += 14
		}
		s.Capacity[i] = 16
		backlog += want
		s.Running[i] = math.Min(backlog, 16)
		backlog -= s.Running[i]
		s.Queued[i] = backlog
	}
	s.Inventory = schemas.Units{Whole: 16, GPUEquivalents: 16}
	return s
}

// sparseL40S has GPUs in only its last ten days: too little history.
func sparseL40S() capacity.Series {
	n := 8 * capacity.HoursPerWeek
	s := capacity.Series{Cluster: "eu-west", Card: "L40S-48GB", Start: capacityMonday,
		Capacity: make([]float64, n), Running: make([]float64, n), Queued: make([]float64, n)}
	for i := n - 240; i < n; i++ {
		s.Capacity[i], s.Running[i] = 8, 3
	}
	s.Inventory = schemas.Units{Whole: 8, GPUEquivalents: 8}
	return s
}

// testCapacityPage is the page of growingH100s and sparseL40S at the end of their
// eight weeks, the H100 at 4 USD a GPU-hour.
func testCapacityPage(t *testing.T) CapacityPage {
	t.Helper()
	now := capacityMonday.Add(8 * capacity.HoursPerWeek * time.Hour)
	page, err := capacityPage(t.Context(), pricebook.New(onePrice{"H100-80GB", 4}),
		[]capacity.Series{growingH100s(), sparseL40S()}, now)
	if err != nil {
		t.Fatal(err)
	}
	return page
}

// TestCapacityPage: the report's capacity page over a known history: the H100s
// are forecast and planned (their demand grows, so more GPUs are needed to keep the
// p95 wait under an hour; the forecast is the naive one where it backtests
// better, with no trend), the sparse L40S is named as skipped, and the page's
// table, chart (inline SVG: four lines, 56 days of history and 28 of forecast) and
// assumption are the golden file's.
func TestCapacityPage(t *testing.T) {
	page := testCapacityPage(t)
	if len(page.Cards) != 1 || len(page.Skipped) != 1 || page.Skipped[0] != "eu-west/L40S-48GB" {
		t.Fatalf("cards %d, skipped %v: want the H100s forecast and the L40S skipped", len(page.Cards), page.Skipped)
	}
	c := page.Cards[0]
	if len(c.History) != 56 || len(c.Forecast) != 28 || c.CapacityGPUs != 16 || c.Inventory.Whole != 16 || c.Why == "" ||
		(c.Method == capacity.MethodNaive) != (c.TrendGPUsPerWeek == 0) ||
		c.ExtraGPUs <= 0 || c.CostPerMonth == nil || *c.CostPerMonth != float64(c.ExtraGPUs)*4*capacity.HoursPerMonth || c.WAPE == nil {
		t.Errorf("H100 card: %d days of history, %d of forecast, %v GPUs, trend %v/week, +%d GPUs for %v USD/month, WAPE %v",
			len(c.History), len(c.Forecast), c.CapacityGPUs, c.TrendGPUsPerWeek, c.ExtraGPUs, c.CostPerMonth, c.WAPE)
	}
	r := &Report{Period: PeriodInfo{Label: "2026-11"}, Capacity: page}
	var html bytes.Buffer
	if err := WriteHTML(&html, r); err != nil {
		t.Fatal(err)
	}
	h := html.String()
	from, to := strings.Index(h, "<h2>Capacity</h2>"), strings.Index(h, "<footer>")
	if from < 0 || to < from {
		t.Fatal("no capacity section in the HTML report")
	}
	section := h[from:to]
	if n := strings.Count(section, "<polyline"); n != 4 {
		t.Errorf("capacity chart has %d lines, want 4 (capacity, demand and their forecasts)", n)
	}
	js, err := json.MarshalIndent(page, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	compareGolden(t, filepath.Join("testdata", "capacity.golden"), []byte(section+"\n"+string(js)+"\n"))
}

// TestCapacityPageStopsAtTheData: hours the view has no GPUs for at the end of the
// history (a period not over, hours not refreshed) are left out: the forecast
// starts after the last hour with data, and the figures are those of the data.
func TestCapacityPageStopsAtTheData(t *testing.T) {
	s := growingH100s()
	n := len(s.Capacity)
	cut := n - 48
	// The same history followed by two days the view has no row for.
	full := capacity.Series{Cluster: s.Cluster, Card: s.Card, Start: s.Start,
		Capacity: append(append([]float64(nil), s.Capacity[:cut]...), make([]float64, 48)...),
		Running:  append(append([]float64(nil), s.Running[:cut]...), make([]float64, 48)...),
		Queued:   append(append([]float64(nil), s.Queued[:cut]...), make([]float64, 48)...), Inventory: s.Inventory}
	short := capacity.Series{Cluster: s.Cluster, Card: s.Card, Start: s.Start,
		Capacity: s.Capacity[:cut], Running: s.Running[:cut], Queued: s.Queued[:cut], Inventory: s.Inventory}
	now := capacityMonday.Add(8 * capacity.HoursPerWeek * time.Hour)
	prices := pricebook.New(onePrice{"H100-80GB", 4})
	a, err := capacityPage(t.Context(), prices, []capacity.Series{full}, now)
	if err != nil {
		t.Fatal(err)
	}
	b, err := capacityPage(t.Context(), prices, []capacity.Series{short}, now)
	if err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if len(a.Cards) != 1 || string(ja) != string(jb) {
		t.Errorf("a history with two empty days at its end gives\n%s\nwithout them\n%s", ja, jb)
	}
}
