package chargeback

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/gpupool/gpupool/collector/sim"
	"github.com/gpupool/gpupool/ingest"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
)

// simStart is where simulated fleets start: far enough in the past for ingest's
// checks, on a day boundary so that a day is a whole number of hours.
var simStart = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)

// simPrices price every card type the simulator builds, with a price change in
// the middle of the first simulated day (so some jobs span it).
const simPrices = `INSERT INTO price_book (card, effective_from, effective_to, price_per_gpu_hour, currency, note) VALUES
    ('H100-80GB', '2025-01-01 00:00:00', NULL, 3.50, 'USD', ''),
    ('H100-80GB', '2026-01-05 13:00:00', NULL, 3.20, 'USD', 'renewal'),
    ('A100-40GB', '2025-01-01 00:00:00', NULL, 1.60, 'USD', ''),
    ('A100-80GB', '2025-01-01 00:00:00', NULL, 2.10, 'USD', ''),
    ('L40S-48GB', '2025-01-01 00:00:00', NULL, 1.10, 'USD', '')`

// loadSim runs cfg's fleet for d and loads its samples and job events into s, as
// the ingest loader does for gpupool analyze --trace. It returns the GPU sample
// rows loaded.
func loadSim(tb testing.TB, s store.Store, cfg sim.Config, d time.Duration) int {
	tb.Helper()
	fleet, err := sim.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return loadSimFleet(tb, s, fleet, cfg, d)
}

// loadSimFleet is loadSim with the fleet given (built from cfg), so that the
// caller can read its ground truth.
func loadSimFleet(tb testing.TB, s store.Store, fleet *sim.Fleet, cfg sim.Config, d time.Duration) int {
	tb.Helper()
	ctx := context.Background()
	l := ingest.NewLoader(s, 500000)
	gpuRows := 0
	b := &schemas.SampleBatch{}
	for at := cfg.Start; at.Before(cfg.Start.Add(d)); at = at.Add(cfg.Tick) {
		if err := l.AddJobs(ctx, fleet.Advance(at)); err != nil {
			tb.Fatal(err)
		}
		for _, n := range fleet.Nodes() {
			b.Cluster, b.Node, b.GPUs, b.Processes = n.Cluster(), n.Name(), b.GPUs[:0], b.Processes[:0]
			if err := n.Sample(ctx, at, b); err != nil {
				tb.Fatal(err)
			}
			gpuRows += len(b.GPUs)
			if err := l.AddSamples(ctx, b); err != nil {
				tb.Fatal(err)
			}
		}
	}
	if err := l.Flush(ctx); err != nil {
		tb.Fatal(err)
	}
	return gpuRows
}

// near reports whether two totals agree to 1e-9 relative (float sums in another
// order) or 1e-9 absolute.
func near(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// resultMap indexes a result's rows by the text of its first n columns.
func resultMap(t *testing.T, res *store.Result, n int) map[string][]any {
	t.Helper()
	out := map[string][]any{}
	for _, row := range res.Rows {
		key := ""
		for _, v := range row[:n] {
			key += store.FormatValue(v) + "|"
		}
		if _, dup := out[key]; dup {
			t.Fatalf("duplicate row key %s", key)
		}
		out[key] = row[n:]
	}
	return out
}

// sameRows reports the differences between two results with the same columns,
// rows matched on the first n columns, numbers compared with near.
func sameRows(t *testing.T, what string, a, b *store.Result, n int) {
	t.Helper()
	am, bm := resultMap(t, a, n), resultMap(t, b, n)
	if len(am) != len(bm) {
		t.Errorf("%s: %d rows against %d", what, len(am), len(bm))
	}
	bad := 0
	for k, av := range am {
		bv, ok := bm[k]
		if !ok {
			t.Errorf("%s: row %s missing", what, k)
			continue
		}
		for i := range av {
			x, xok := toFloat(av[i])
			y, yok := toFloat(bv[i])
			if xok != yok || (xok && !near(x, y)) || (!xok && store.FormatValue(av[i]) != store.FormatValue(bv[i])) {
				if bad++; bad <= 10 {
					t.Errorf("%s: row %s column %s: %v against %v", what, k, a.Columns[n+i].Name, av[i], bv[i])
				}
			}
		}
	}
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	case nil:
		return math.NaN(), true
	}
	return 0, false
}

// TestRollupsMatchRaw loads a simulated day of the default fleet (64 GPUs, MIG
// slices, failures and reruns, idle notebooks, a price change at 13:00) and checks
// that every chargeback_daily figure, computed three ways — the view over the
// refreshed hourly table, the same report live over the rollups, and the
// documented query over the raw tables — agrees, and that Compute's per-job rows
// add up to it.
func TestRollupsMatchRaw(t *testing.T) {
	if testing.Short() {
		t.Skip("loads a simulated day (about 15 s); -short skips it")
	}
	ctx := t.Context()
	s := openMigrated(t)
	cfg := sim.DefaultConfig()
	cfg.Start = simStart
	from, to := simStart, simStart.Add(24*time.Hour)
	loadSim(t, s, cfg, 24*time.Hour)
	if err := s.Exec(ctx, simPrices, nil); err != nil {
		t.Fatal(err)
	}
	if err := Refresh(ctx, s, to); err != nil {
		t.Fatal(err)
	}
	p := store.Params{"from": timeParam(from), "to": timeParam(to)}
	run := func(q string, p store.Params) *store.Result {
		res, err := s.Query(ctx, q, p)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	// The cluster (the views' last column) leads, so that rows are keyed on it too.
	byCluster := func(q string) string { return "SELECT cluster, * EXCEPT (cluster) FROM (" + q + ")" }
	view := run(byCluster("SELECT * FROM chargeback_daily WHERE day = '2026-01-05' ORDER BY ALL"), nil)
	raw := run(byCluster(RawDailyQuery()), p)
	live := run(byCluster(rollupDailyQuery()), p)
	if len(view.Rows) < 20 {
		t.Fatalf("only %d chargeback rows: the simulation did not run", len(view.Rows))
	}
	keys := 7 // cluster, day, team, project, model_name, pool, card
	sameRows(t, "raw query vs chargeback_daily", raw, view, keys)
	sameRows(t, "rollup query vs chargeback_daily", live, view, keys)

	// Compute's per-job rows add up to the same totals.
	rows, err := Compute(ctx, s, from, to)
	if err != nil {
		t.Fatal(err)
	}
	var gpuH, idleH, cost, energy, wait, failed float64
	for _, r := range rows {
		gpuH, idleH, energy, wait = gpuH+r.GPUHours, idleH+r.IdleGPUHours, energy+r.EnergyKWh, wait+r.QueueWaitHours
		if r.Cost == nil || r.FailedRerunCost == nil {
			t.Fatalf("job %s unpriced: every simulated card has a price", r.Job)
		}
		cost, failed = cost+*r.Cost, failed+*r.FailedRerunCost
	}
	totals := run("SELECT sum(gpu_hours), sum(idle_gpu_hours), sum(cost), sum(energy_kwh), sum(queue_wait_hours), sum(failed_rerun_cost) FROM chargeback_daily WHERE day = '2026-01-05'", nil)
	for i, got := range []float64{gpuH, idleH, cost, energy, wait, failed} {
		want, _ := totals.Float(0, totals.Columns[i].Name)
		if !near(got, want) {
			t.Errorf("Compute's %s = %v, chargeback_daily's %v", totals.Columns[i].Name, got, want)
		}
	}
	if failed <= 0 || idleH <= 0 {
		t.Errorf("the day has no failed-rerun cost (%v) or idle GPU-hours (%v): the test proves less than it claims", failed, idleH)
	}

	// Unallocated capacity, live and from the view.
	un, err := ComputeUnallocated(ctx, s, from, to)
	if err != nil {
		t.Fatal(err)
	}
	var unH float64
	for _, u := range un {
		unH += u.UnallocatedGPUHours
	}
	if want := queryFloat(t, s, "SELECT sum(unallocated_gpu_hours) FROM unallocated_capacity WHERE day = '2026-01-05'"); !near(unH, want) {
		t.Errorf("ComputeUnallocated %v GPU-hours, unallocated_capacity %v", unH, want)
	}
}
