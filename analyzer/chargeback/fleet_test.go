package chargeback

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/store"
)

func ptr(f float64) *float64 { return &f }

// TestTinyFleet checks every figure of the tiny fleet (fixture_test.go) against
// the answer worked out by hand.
func TestTinyFleet(t *testing.T) {
	ctx := t.Context()
	s := openMigrated(t)
	loadTinyFleet(t, s)

	rows, err := Compute(ctx, s, tinyFrom, tinyTo)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Row{
		// 00:30–01:30 on GPU-a, active all along, 4 USD/h; failed and rerun by
		// train-2, so all of its cost is failed-rerun cost; waited 30 min; 700 W
		// for an hour.
		"train-1": {Team: "nlp", Project: "chat", Card: "H100-80GB", Pool: "training-prod", ModelName: "llama-3-8b",
			GPUHours: 1, UsedGPUHours: 1, Cost: ptr(4), IdleCost: ptr(0), FailedRerunCost: ptr(4),
			QueueWaitHours: 0.5, EnergyKWh: 0.7, Currency: "USD", Attempt: 1, Status: "failed",
			// 0.5 waiting GPU-hours at the card's 4 USD; 0.7 kWh at 0.20 USD.
			QueueWaitGPUHours: 0.5, QueueWaitCost: ptr(2), QueueWaitCurrency: "USD", EnergyCost: ptr(0.14), EnergyCurrency: "USD"},
		// 02:00–04:00 (still running): active the first hour, idle the second; the
		// price changes from 4 to 6 USD at 03:00; waited 20 min; 700 W then 100 W.
		"train-2": {Team: "nlp", Project: "chat", Card: "H100-80GB", Pool: "training-prod", ModelName: "llama-3-8b",
			GPUHours: 2, UsedGPUHours: 1, IdleGPUHours: 1, Cost: ptr(10), IdleCost: ptr(6), FailedRerunCost: ptr(0),
			QueueWaitHours: 1.0 / 3, EnergyKWh: 0.8, Currency: "USD", Attempt: 2, RerunOf: "train-1",
			QueueWaitGPUHours: 1.0 / 3, QueueWaitCost: ptr(4.0 / 3), QueueWaitCurrency: "USD", EnergyCost: ptr(0.16), EnergyCurrency: "USD"},
		// A 3g.20gb MIG slice for the whole period (the job runs on to 05:00):
		// 4 h × 3/7 GPU at 2.10 USD; waited 10 min; 150 W.
		"nb-1": {Team: "vision", Project: "ocr", Card: "A100-40GB", Pool: "dev", ModelName: "resnet50",
			GPUHours: 12.0 / 7, UsedGPUHours: 12.0 / 7, Cost: ptr(3.6), IdleCost: ptr(0), FailedRerunCost: ptr(0),
			QueueWaitHours: 1.0 / 6, EnergyKWh: 0.6, Currency: "USD", Attempt: 1, Status: "succeeded",
			// The dev pool prices a waiting GPU-hour at 1 USD (queue-wait:dev).
			QueueWaitGPUHours: 1.0 / 6, QueueWaitCost: ptr(1.0 / 6), QueueWaitCurrency: "USD", EnergyCost: ptr(0.12), EnergyCurrency: "USD"},
		// GPU-c alone 01:00–02:00, then shared with s2 at 30000:10000 MiB, 3:1;
		// L40S has no price, so cost is unknown (nil), not 0; 300 W.
		"s1": {Team: "recsys", Project: "feed-ranking", Card: "L40S-48GB", Pool: "inference-batch", ModelName: "dlrm-v2",
			GPUHours: 1.75, UsedGPUHours: 1.75, UnpricedGPUHours: 1.75, FailedRerunCost: ptr(0),
			EnergyKWh: 0.525, Attempt: 1, Status: "succeeded",
			// Started at once: no wait, so a wait cost of 0 even unpriced.
			QueueWaitCost: ptr(0), EnergyCost: ptr(0.105), EnergyCurrency: "USD"},
		"s2": {Team: "recsys", Project: "ads-ctr", Card: "L40S-48GB", Pool: "inference-batch", ModelName: "dcn-v2",
			GPUHours: 0.25, UsedGPUHours: 0.25, UnpricedGPUHours: 0.25, FailedRerunCost: ptr(0),
			QueueWaitHours: 0.5, EnergyKWh: 0.075, Attempt: 1, Status: "succeeded",
			// Waited 0.5 h for an unpriced card: the wait's cost is unknown.
			QueueWaitGPUHours: 0.5, EnergyCost: ptr(0.015), EnergyCurrency: "USD"},
	}
	if len(rows) != len(want) {
		t.Fatalf("got %d rows, want %d: %+v", len(rows), len(want), rows)
	}
	for _, got := range rows {
		w, ok := want[got.Job]
		if !ok {
			t.Errorf("unexpected job %q", got.Job)
			continue
		}
		w.Job, w.Cluster = got.Job, "c1"
		if diff := diffRow(got, w); diff != "" {
			t.Errorf("job %s: %s", got.Job, diff)
		}
	}
	b, err := json.MarshalIndent(rows, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "compute_tiny.json", string(b)+"\n")

	// GPU-a: free 00:00–00:30 and 01:30–02:00, idle at 100 W, 4 USD/h. GPU-c:
	// free 00:00–01:00 and 03:00–04:00 at 60 W, unpriced. MIG-b: always held.
	un, err := ComputeUnallocated(ctx, s, tinyFrom, tinyTo)
	if err != nil {
		t.Fatal(err)
	}
	wantUn := map[string]Unallocated{
		"A100-40GB": {CapacityGPUHours: 12.0 / 7, AllocatedGPUHours: 12.0 / 7, Cost: ptr(0), Currency: ""},
		"H100-80GB": {CapacityGPUHours: 4, AllocatedGPUHours: 3, UnallocatedGPUHours: 1, Cost: ptr(4), Currency: "USD", EnergyKWh: 0.1},
		"L40S-48GB": {CapacityGPUHours: 4, AllocatedGPUHours: 2, UnallocatedGPUHours: 2, EnergyKWh: 0.12},
	}
	if len(un) != len(wantUn) {
		t.Fatalf("got %d unallocated rows, want %d: %+v", len(un), len(wantUn), un)
	}
	for _, got := range un {
		w := wantUn[got.Card]
		w.Cluster, w.Card = "c1", got.Card
		if g, ww := fmt.Sprint(roundU(got)), fmt.Sprint(roundU(w)); g != ww {
			t.Errorf("unallocated %s: got %s, want %s", got.Card, g, ww)
		}
	}

	// The views, after a refresh, and the documented raw query agree with Compute.
	if err := Refresh(ctx, s, tinyTo); err != nil {
		t.Fatal(err)
	}
	p := store.Params{"from": timeParam(tinyFrom), "to": timeParam(tinyTo)}
	daily := table(t, s, "SELECT * FROM chargeback_daily WHERE day = '2026-03-01' ORDER BY ALL", nil)
	if raw := table(t, s, "SELECT * FROM ("+RawDailyQuery()+") ORDER BY ALL", p); raw != daily {
		t.Errorf("raw query:\n%s\nchargeback_daily:\n%s", raw, daily)
	}
	if live := table(t, s, "SELECT * FROM ("+rollupDailyQuery()+") ORDER BY ALL", p); live != daily {
		t.Errorf("rollup query:\n%s\nchargeback_daily:\n%s", live, daily)
	}
	// Compute after the refresh reads the refreshed hours from the hourly table
	// and only the partial hours at the ends live; it must give what a live
	// computation of the whole period gives.
	for _, period := range [][2]time.Time{{tinyFrom, tinyTo}, {at(0, 30), at(3, 30)}, {at(0, 10), at(1, 50)}, {at(2, 0), at(2, 20)}} {
		got, err := Compute(ctx, s, period[0], period[1])
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.Query(ctx, renderReport(rollupSources, viewReportSources, jobKeys, ""),
			store.Params{"from": timeParam(period[0]), "to": timeParam(period[1])})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(res.Rows) {
			t.Fatalf("%v: Compute gave %d rows, the live query %d", period, len(got), len(res.Rows))
		}
		rows := store.Read(res, "live chargeback")
		for i := 0; rows.Next(); i++ {
			live := scanRow(rows)
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			if diff := diffRow(got[i], live); diff != "" {
				t.Errorf("%v: job %s: refreshed and live differ: %s", period, live.Job, diff)
			}
		}
	}

	var views strings.Builder
	for _, q := range []string{
		"SELECT * FROM chargeback_daily ORDER BY ALL",
		"SELECT * FROM chargeback_monthly ORDER BY ALL",
		"SELECT * FROM idle_cost ORDER BY ALL",
		"SELECT * FROM queue_wait ORDER BY job",
		"SELECT * FROM unallocated_capacity ORDER BY ALL",
		"SELECT * FROM unallocated_by_team ORDER BY ALL",
		"SELECT * FROM utilisation_distribution ORDER BY ALL",
		"SELECT * FROM capacity ORDER BY ALL",
		"SELECT * FROM gpu_daily ORDER BY ALL",
	} {
		fmt.Fprintf(&views, "-- %s\n%s\n", q, table(t, s, q, nil))
	}
	checkGolden(t, "views_tiny.txt", views.String())
}

// diffRow says how got differs from want, comparing figures to 1e-9.
func diffRow(got, want Row) string {
	var d []string
	num := func(name string, g, w float64) {
		if !near(g, w) {
			d = append(d, fmt.Sprintf("%s = %v, want %v", name, g, w))
		}
	}
	opt := func(name string, g, w *float64) {
		switch {
		case g == nil && w == nil:
		case g == nil || w == nil:
			d = append(d, fmt.Sprintf("%s = %v, want %v", name, deref(g), deref(w)))
		default:
			num(name, *g, *w)
		}
	}
	num("gpu_hours", got.GPUHours, want.GPUHours)
	num("used_gpu_hours", got.UsedGPUHours, want.UsedGPUHours)
	num("idle_gpu_hours", got.IdleGPUHours, want.IdleGPUHours)
	num("unmeasured_gpu_hours", got.UnmeasuredGPUHours, want.UnmeasuredGPUHours)
	num("unpriced_gpu_hours", got.UnpricedGPUHours, want.UnpricedGPUHours)
	num("queue_wait_hours", got.QueueWaitHours, want.QueueWaitHours)
	num("energy_kwh", got.EnergyKWh, want.EnergyKWh)
	opt("cost", got.Cost, want.Cost)
	opt("idle_cost", got.IdleCost, want.IdleCost)
	opt("failed_rerun_cost", got.FailedRerunCost, want.FailedRerunCost)
	num("queue_wait_gpu_hours", got.QueueWaitGPUHours, want.QueueWaitGPUHours)
	opt("queue_wait_cost", got.QueueWaitCost, want.QueueWaitCost)
	opt("energy_cost", got.EnergyCost, want.EnergyCost)
	g, w := got, want
	g.GPUHours, g.UsedGPUHours, g.IdleGPUHours, g.UnmeasuredGPUHours, g.UnpricedGPUHours = 0, 0, 0, 0, 0
	w.GPUHours, w.UsedGPUHours, w.IdleGPUHours, w.UnmeasuredGPUHours, w.UnpricedGPUHours = 0, 0, 0, 0, 0
	g.QueueWaitHours, g.EnergyKWh, g.Cost, g.IdleCost, g.FailedRerunCost = 0, 0, nil, nil, nil
	w.QueueWaitHours, w.EnergyKWh, w.Cost, w.IdleCost, w.FailedRerunCost = 0, 0, nil, nil, nil
	g.QueueWaitGPUHours, g.QueueWaitCost, g.EnergyCost = 0, nil, nil
	w.QueueWaitGPUHours, w.QueueWaitCost, w.EnergyCost = 0, nil, nil
	if g != w {
		d = append(d, fmt.Sprintf("labels %+v, want %+v", g, w))
	}
	return strings.Join(d, "; ")
}

func deref(f *float64) any {
	if f == nil {
		return "nil"
	}
	return *f
}

// roundU rounds an Unallocated's figures so that it prints comparably.
func roundU(u Unallocated) string {
	r := func(f float64) string { return fmt.Sprintf("%.9f", f) }
	c := "nil"
	if u.Cost != nil {
		c = r(*u.Cost)
	}
	return strings.Join([]string{u.Cluster, u.Card, r(u.CapacityGPUHours), r(u.AllocatedGPUHours),
		r(u.UnallocatedGPUHours), r(u.UnallocatedActiveGPUHours), c, u.Currency, r(u.EnergyKWh)}, " ")
}
