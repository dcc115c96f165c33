package chargeback

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/ingest"
	"github.com/gpupool/gpupool/store"
)

// benchFleet is the synthetic fleet BenchmarkChargebackMonth bills.
type benchFleet struct {
	GPUs int           // whole GPUs, 8 per node; nodes cycle through four card types
	Days int           // from 2026-01-01 00:00 UTC
	Tick time.Duration // sample interval
}

// benchScale is the fleet: 1,000 GPUs for 30 days at a 60 s tick (43.2 M GPU
// samples) unless GPUPOOL_BENCH_CHARGEBACK says e.g. "gpus=100,days=3,tick=10s".
func benchScale(b *testing.B) benchFleet {
	f := benchFleet{GPUs: 1000, Days: 30, Tick: time.Minute}
	for _, kv := range strings.Split(os.Getenv("GPUPOOL_BENCH_CHARGEBACK"), ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
		var err error
		switch k {
		case "":
		case "gpus":
			f.GPUs, err = strconv.Atoi(v)
		case "days":
			f.Days, err = strconv.Atoi(v)
		case "tick":
			f.Tick, err = time.ParseDuration(v)
		default:
			err = fmt.Errorf("unknown key %q", k)
		}
		if err != nil {
			b.Fatalf("GPUPOOL_BENCH_CHARGEBACK: %v", err)
		}
	}
	if f.GPUs < 8 || f.GPUs%8 != 0 || f.Days < 1 || f.Tick < time.Second || (24*time.Hour)%f.Tick != 0 {
		b.Fatalf("GPUPOOL_BENCH_CHARGEBACK: want gpus a multiple of 8, days >= 1, a tick of whole seconds dividing a day; got %+v", f)
	}
	return f
}

// The synthetic fleet is generated in SQL (INSERT … SELECT FROM numbers), which
// fills a month in minutes where the simulator would take hours. Even nodes run
// one 8-GPU job per day, odd nodes one 1-GPU job per GPU every 6 hours; each job
// waits a little in the queue first and leaves a little idle time after. A job's
// hash picks its behaviour (busy, busy then idle, idle, barely active), team,
// project and model, and whether it fails (the next attempt on the same GPUs then
// reruns it). Energy counters rise at a steady 300 W. No process samples are
// generated: the chargeback reads them only for GPUs two jobs hold at once,
// which this fleet never does.
const benchJobShape = `
    intDiv(g, 8) AS n,
    n % 2 = 0 AS node_job,
    if(node_job, 86400, 21600) AS blk,
    if(node_job, n, 1000000 + g) AS owner,
    'GPU-' || lower(hex(cityHash64('gpu', g))) AS uuid,
    'node-' || toString(n) AS node_name,
    'c' || toString(n % 4) AS cluster_name,
    ['H100-80GB', 'A100-40GB', 'L40S-48GB', 'A100-80GB'][n % 4 + 1] AS card_name`

func benchSamplesSQL(f benchFleet) string {
	tick := int(f.Tick / time.Second)
	rows := f.GPUs * f.Days * 86400 / tick
	return fmt.Sprintf(`INSERT INTO gpu_samples (ts, cluster, node, gpu_uuid, gpu_index, model, card, mig_profile,
    fb_total_mib, fb_used_mib, gr_engine_active, sm_active, dram_active, gpu_util,
    pcie_tx_bytes_per_s, pcie_rx_bytes_per_s, power_w, energy_mj, temp_c)
SELECT toDateTime64('2026-01-01 00:00:00', 3, 'UTC') + toIntervalSecond(sec) AS ts, cluster_name, node_name, uuid,
       toUInt16(g %% 8), card_name, card_name, '', 81920, if(alloc, 60000, 0),
       gr, gr * 0.8, 0, gr, 1000, 1000, 60 + 600 * gr,
       1000000000 + i * %[2]d * 300000, 40 + 40 * gr
FROM (
    SELECT number, intDiv(number, %[1]d) AS i, number %% %[1]d AS g, i * %[2]d AS sec, %[4]s,
           intDiv(sec, blk) AS k, sec - k * blk AS tin,
           cityHash64(owner, k) AS h,
           h %% if(node_job, 3600, 1800) AS wait,
           intDiv(h, 7) %% if(node_job, 7200, 3600) AS gap,
           tin >= wait AND tin < blk - gap AS alloc,
           intDiv(h, 1000) %% 10 AS kind,
           cityHash64(number) %% 1000 AS noise,
           toFloat32(multiIf(NOT alloc, 0, kind <= 5, 0.5 + noise / 2200, kind <= 7, if(tin < (wait + blk - gap) / 2, 0.8, 0),
                             kind = 8, 0, 0.02 + noise / 12500)) AS gr
    FROM numbers_mt(%[3]d)
)`, f.GPUs, tick, rows, benchJobShape)
}

func benchJobsSQL(f benchFleet) string {
	// One row per (owner, block): node owners use their first GPU's number g.
	return fmt.Sprintf(`INSERT INTO job_events (ts, job, event, source, cluster, team, project, pool, model_name, workload,
    gpus, card, nodes, gpu_uuids, status, exit_code, attempt, rerun_of)
SELECT toDateTime64('2026-01-01 00:00:00', 3, 'UTC') + toIntervalSecond(k * blk + [0, wait, blk - gap][e]) AS ts,
       key, ['submit', 'start', 'end'][e], 'kubernetes', cluster_name,
       if(e = 1, ['nlp', 'vision', 'recsys', 'speech', 'research'][h %% 5 + 1], ''),
       if(e = 1, 'p' || toString(h %% 10), ''),
       if(e = 1, ['training-prod', 'training-exp', 'inference-batch', 'dev'][intDiv(h, 5) %% 4 + 1], ''),
       if(e = 1, 'model-' || toString(intDiv(h, 20) %% 12), ''), '',
       if(e = 1, toUInt32(if(node_job, 8, 1)), 0), if(e = 1, card_name, ''),
       if(e = 2, [node_name], []),
       if(e = 2, if(node_job, arrayMap(x -> 'GPU-' || lower(hex(cityHash64('gpu', n * 8 + x))), range(8)), [uuid]), []),
       if(e = 3, if(failed, 'failed', 'succeeded'), ''), if(e = 3 AND failed, 1, 0),
       if(prev_failed, 2, 1), if(e = 1 AND prev_failed, prev_key, '')
FROM (
    SELECT g, k, %[3]s,
           cityHash64(owner, k) AS h,
           h %% if(node_job, 3600, 1800) AS wait,
           intDiv(h, 7) %% if(node_job, 7200, 3600) AS gap,
           intDiv(h, 13) %% 20 = 0 AS failed,
           k > 0 AND intDiv(cityHash64(owner, k - 1), 13) %% 20 = 0 AS prev_failed,
           'job-' || toString(owner) || '-' || toString(k) AS key,
           'job-' || toString(owner) || '-' || toString(k - 1) AS prev_key
    FROM (
        SELECT intDiv(number, %[1]d) AS g, number %% %[1]d AS k FROM numbers(%[2]d * %[1]d)
    )
    WHERE intDiv(g, 8) %% 2 = 1 OR (g %% 8 = 0 AND k < %[4]d)
)
ARRAY JOIN [1, 2, 3] AS e`, f.Days*4, f.GPUs, benchJobShape, f.Days)
}

const benchPrices = `INSERT INTO price_book (card, effective_from, effective_to, price_per_gpu_hour, currency, note) VALUES
    ('H100-80GB', '2025-01-01 00:00:00', NULL, 3.50, 'USD', ''),
    ('H100-80GB', '2026-01-15 00:00:00', NULL, 3.20, 'USD', 'mid-month change'),
    ('A100-40GB', '2025-01-01 00:00:00', NULL, 1.60, 'USD', ''),
    ('A100-80GB', '2025-01-01 00:00:00', NULL, 2.10, 'USD', ''),
    ('L40S-48GB', '2025-01-01 00:00:00', NULL, 1.10, 'USD', '')`

// benchTotals are the month's totals compared across the three ways of computing
// them.
const benchTotals = `SELECT count() AS row_count, sum(gpu_hours) AS gpu_hours, sum(used_gpu_hours) AS used_gpu_hours,
    sum(idle_gpu_hours) AS idle_gpu_hours, sum(unmeasured_gpu_hours) AS unmeasured_gpu_hours, sum(cost) AS cost,
    sum(idle_cost) AS idle_cost, sum(failed_rerun_cost) AS failed_rerun_cost,
    sum(queue_wait_hours) AS queue_wait_hours, sum(energy_kwh) AS energy_kwh, sum(jobs) AS jobs`

// BenchmarkChargebackMonth bills a synthetic month of a 1,000-GPU fleet three
// ways in the same run: the chargeback_monthly view (over the hourly table the
// analyzer refreshes from the rollups), the same report computed live from the
// minute rollups, and the documented query over the raw samples. It fails unless
// all three give the same totals. Run it alone:
//
//	go test ./analyzer/chargeback -run '^$' -bench ChargebackMonth -benchtime 1x -timeout 2h
func BenchmarkChargebackMonth(b *testing.B) {
	f := benchScale(b)
	ctx := context.Background()
	s := openMigrated(b)
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	to := from.AddDate(0, 0, f.Days)
	step := func(name, q string) time.Duration {
		t0 := time.Now()
		if err := s.Exec(ctx, q, nil); err != nil {
			b.Fatalf("%s: %v", name, err)
		}
		return time.Since(t0)
	}
	gen := step("job events", benchJobsSQL(f))
	gen += step("samples", benchSamplesSQL(f))
	// Ingest writes the rollups (migrations 0020, 0021); samples loaded by SQL get
	// them from the views' queries, as a backfill would.
	t0 := time.Now()
	if err := ingest.RollUpLoaded(ctx, s, from, to); err != nil {
		b.Fatal(err)
	}
	gen += time.Since(t0)
	step("prices", benchPrices)
	t0 = time.Now()
	if err := Refresh(ctx, s, to); err != nil {
		b.Fatal(err)
	}
	refresh := time.Since(t0)
	counts, err := s.Query(ctx, `SELECT (SELECT count() FROM gpu_samples) AS gpu_samples, (SELECT count() FROM gpu_minute) AS gpu_minute,
        (SELECT count() FROM chargeback_hourly) AS hourly, (SELECT count() FROM jobs) AS jobs`, nil)
	if err != nil {
		b.Fatal(err)
	}
	samples, _ := counts.Int(0, "gpu_samples")
	minutes, _ := counts.Int(0, "gpu_minute")
	hourly, _ := counts.Int(0, "hourly")
	jobs, _ := counts.Int(0, "jobs")
	b.Logf("fleet: %d GPUs × %d days at a %v tick: %d gpu_samples rows, %d gpu_minute rows, %d chargeback_hourly rows, %d job attempts; generated in %v, refreshed in %v",
		f.GPUs, f.Days, f.Tick, samples, minutes, hourly, jobs, gen.Round(time.Second), refresh.Round(time.Second))

	p := store.Params{"from": timeParam(from), "to": timeParam(to)}
	ways := []struct{ name, sql string }{
		{"view", benchTotals + " FROM chargeback_monthly WHERE month = '2026-01-01'"},
		{"rollup", benchTotals + " FROM (" + rollupDailyQuery() + ")"},
		{"raw", benchTotals + " FROM (" + RawDailyQuery() + ")"},
	}
	took := map[string]time.Duration{}
	totals := map[string]*store.Result{}
	for _, w := range ways {
		b.Run(w.name, func(b *testing.B) {
			for b.Loop() {
				t0 := time.Now()
				res, err := s.Query(ctx, w.sql, p)
				if err != nil {
					b.Fatal(err)
				}
				took[w.name], totals[w.name] = time.Since(t0), res
			}
		})
	}
	for _, w := range ways[1:] {
		got, want := totals[w.name], totals["view"]
		if got == nil || want == nil {
			continue // filtered out by -bench
		}
		for _, c := range got.Columns {
			if c.Name == "row_count" || c.Name == "jobs" {
				continue // the view groups by month, the others by day
			}
			g, _ := got.Float(0, c.Name)
			v, _ := want.Float(0, c.Name)
			if !near(g, v) {
				b.Fatalf("%s: %s = %v, the view says %v", w.name, c.Name, g, v)
			}
		}
	}
	if v := totals["view"]; v != nil {
		var sb strings.Builder
		for _, c := range v.Columns {
			x, _ := v.Float(0, c.Name)
			fmt.Fprintf(&sb, " %s=%.6g", c.Name, x)
		}
		b.Logf("month totals (view):%s", sb.String())
	}
	if took["view"] > 0 && took["raw"] > 0 {
		b.Logf("totals equal; last query times: view %v, rollup %v, raw %v; raw/view %.0fx, raw/rollup %.1fx",
			took["view"].Round(time.Millisecond), took["rollup"].Round(time.Millisecond), took["raw"].Round(time.Millisecond),
			float64(took["raw"])/float64(took["view"]), float64(took["raw"])/float64(took["rollup"]))
	}
}
