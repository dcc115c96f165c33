package findings

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/ingest"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
)

// BenchmarkScoreSimulatedWeek scores a simulated week of the default fleet (2
// clusters × 4 nodes × 8 GPUs, MIG nodes included) with the real-fleet patterns
// (sim.Config.RealFleet: time-sliced GPUs, hung jobs, memory-full servers, bursty
// small jobs, zombies under new tenants; GPUPOOL_SCORE_PLAIN=1 scores the fleet
// without them) sampled every 10 s, with a pass every 5 minutes, and reports
// precision, recall and delay per kind. It takes tens of minutes: run it with
// -benchtime 1x (make bench does); GPUPOOL_SCORE_DAYS=2 scores a shorter run.
func BenchmarkScoreSimulatedWeek(b *testing.B) {
	const period = 5 * time.Minute
	seed := scoreSeed(b)
	sc := simConfig(seed, 10*time.Second)
	sc.RealFleet = os.Getenv("GPUPOOL_SCORE_PLAIN") != "1"
	days := 7
	if s := os.Getenv("GPUPOOL_SCORE_DAYS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("GPUPOOL_SCORE_DAYS: %q is not a number of days", s)
		}
		days = n
	}
	var sb *scoreboard
	for b.Loop() {
		sb = runScenario(b, scenario{sim: sc, duration: time.Duration(days) * 24 * time.Hour, period: period, cfg: DefaultConfig()})
	}
	b.Logf("seed %d, real fleet %v, %d days, 10 s ticks, pass every %v: %d passes, %d rows\n%s", seed, sc.RealFleet, days, period, sb.passes, sb.rows, sb.table())
	b.Log(sb.details())
	for _, k := range schemas.FindingKinds {
		s := sb.kinds[k]
		b.ReportMetric(s.precision(), string(k)+"_precision")
		b.ReportMetric(s.recall(), string(k)+"_recall")
		b.ReportMetric(s.delayQ(0.5), string(k)+"_delay_p50_min")
		b.ReportMetric(s.delayQ(1), string(k)+"_delay_max_min")
	}
	sb.checkGoals(b, period)
	sb.checkPrecision(b)
}

// scoreSeed is the simulator seed scoring runs use: GPUPOOL_SCORE_SEED, else 1.
func scoreSeed(tb testing.TB) uint64 {
	tb.Helper()
	s := os.Getenv("GPUPOOL_SCORE_SEED")
	if s == "" {
		return 1
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		tb.Fatalf("GPUPOOL_SCORE_SEED: %v", err)
	}
	return n
}

// fleetGPUs generates, with INSERT … SELECT FROM numbers() (seconds, where the
// simulator would take minutes), two hours of a fleet of n GPUs (1,000 unless
// said) sampled at 1 Hz: n/8 nodes of 8 GPUs (H100, A100-80GB and L40S), one job and one process per GPU,
// started an hour before the data begins. By GPU number mod 10: 0 idle, 1
// memory-bound, 2 a small job on a big card, 3 low utilisation, the rest busy
// training; every 50th GPU's job ended an hour in and left its process behind, and
// every 100th GPU holds a stray process nobody knows. At 1,000 GPUs that is 7.2 M GPU
// rows and 7.2 M process rows; a pass reads the last 30 min (idle), 1 h (memory_bound) and 2 h (zombie,
// wrong_card, low_util) of them.
func fleetGPUs(b *testing.B, fx *fixture, t0 time.Time, n int) {
	b.Helper()
	ctx := b.Context()
	p := store.Params{"t0": tsParam(t0), "n": strconv.Itoa(n)}
	jobs := `
INSERT INTO job_events (ts, job, event, source, cluster, team, project, queue, pool, model_name, workload, gpus, card, nodes, gpu_uuids, status, exit_code, attempt, rerun_of, labels)
SELECT {t0:DateTime64(3, 'UTC')} - INTERVAL 1 HOUR + toIntervalSecond(e) AS ts,
       concat('job-', toString(g)), ['submit', 'admit', 'start', 'end'][e + 1], 'kubernetes', 'c1',
       ['nlp', 'vision', 'recsys', 'speech', 'research'][g % 5 + 1], 'p', 'q',
       multiIf(g % 10 = 0, 'dev', g % 10 = 2, 'dev', 'training-exp'), 'm', 'training', 1, '',
       [concat('node-', toString(intDiv(g, 8)))], [concat('GPU-', toString(g))],
       if(e = 3, 'succeeded', ''), 0, 1, '', map()
FROM (SELECT number AS g, arrayJoin([0, 1, 2]) AS e FROM numbers({n:UInt32}))
UNION ALL
SELECT {t0:DateTime64(3, 'UTC')} + INTERVAL 1 HOUR, concat('job-', toString(number)), 'end', 'kubernetes', 'c1', '', '', '', '', '', '', 0, '',
       [], [], 'succeeded', 0, 1, '', map()
FROM numbers({n:UInt32}) WHERE number % 50 = 5`
	if err := fx.s.Exec(ctx, jobs, p); err != nil {
		b.Fatal(err)
	}
	// Ten minutes of 1,000 GPUs per insert keeps the engine's memory for one
	// insert small.
	step := min(10, max(1, 10*1000/n))
	p["step"] = strconv.Itoa(step)
	for m := 0; m < 120; m += step {
		p["m"] = strconv.Itoa(m)
		gpus := `
INSERT INTO gpu_samples (ts, cluster, node, gpu_uuid, gpu_index, model, card, mig_profile, fb_total_mib, fb_used_mib,
    gr_engine_active, sm_active, sm_occupancy, tensor_active, dram_active, gpu_util, pcie_tx_bytes_per_s, pcie_rx_bytes_per_s,
    power_w, energy_mj, temp_c, xid, clock_event_reasons)
SELECT ts, 'c1', concat('node-', toString(intDiv(g, 8))), concat('GPU-', toString(g)), g % 8,
       ['NVIDIA H100 80GB HBM3', 'NVIDIA A100 80GB PCIe', 'NVIDIA L40S'][c + 1], ['H100-80GB', 'A100-80GB', 'L40S-48GB'][c + 1], '',
       [81559, 81920, 46068][c + 1] AS total,
       toUInt32(multiIf(cls = 0, 8000, cls = 2, 5000, zombie AND after, 6000, total * 0.7)),
       multiIf(cls = 0 OR (zombie AND after), 0, cls = 1, 0.7, cls = 2, 0.3, cls = 3, 0.3, 0.9 + 0.05 * noise) AS gr,
       multiIf(cls = 0 OR (zombie AND after), 0, cls = 1, 0.2, cls = 2, 0.1, cls = 3, 0.1, 0.7 + 0.1 * noise),
       gr / 2, multiIf(cls = 1, 0.01, gr * 0.5), multiIf(cls = 1, 0.8, gr * 0.4), gr,
       multiIf(cls = 0 OR (zombie AND after), 2000, 2e8), multiIf(cls = 0 OR (zombie AND after), 8000, 1e9),
       100 + 500 * gr, 1e9 + toUInt64(s) * 300000, 40 + 30 * gr, 0, 0
FROM (
    SELECT number % {n:UInt32} AS g, intDiv(number, {n:UInt32}) + {m:UInt32} * 60 AS s,
           {t0:DateTime64(3, 'UTC')} + toIntervalSecond(s) AS ts,
           (g % 4) % 3 AS c, g % 10 AS cls, g % 50 = 5 AS zombie, s >= 3600 AS after,
           (cityHash64(number, {m:UInt32}) % 1000) / 1000 AS noise
    FROM numbers({n:UInt32} * 60 * {step:UInt32})
)`
		procs := `
INSERT INTO process_samples (ts, cluster, node, gpu_uuid, pid, process_name, job, fb_used_mib, sm_util, mem_util)
SELECT ts, 'c1', concat('node-', toString(intDiv(g, 8))), concat('GPU-', toString(g)),
       toUInt32(10000 + g), 'python3', if(stray, '', concat('job-', toString(g))),
       toUInt32(multiIf(g % 10 = 0, 8000, g % 10 = 2, 5000, zombie AND after, 6000, 30000)),
       multiIf(g % 10 = 0 OR (zombie AND after) OR stray, 0, 0.5), 0.2
FROM (
    SELECT number % {n:UInt32} AS g, intDiv(number, {n:UInt32}) + {m:UInt32} * 60 AS s,
           {t0:DateTime64(3, 'UTC')} + toIntervalSecond(s) AS ts,
           g % 50 = 5 AS zombie, s >= 3600 AS after, g % 100 = 7 AS stray
    FROM numbers({n:UInt32} * 60 * {step:UInt32})
)`
		for _, q := range []string{gpus, procs} {
			if err := fx.s.Exec(ctx, q, p); err != nil {
				b.Fatal(err)
			}
		}
	}
	// Ingest writes the rollups (migrations 0020, 0021); samples loaded by SQL get
	// them from the views' queries, as a backfill would.
	if err := ingest.RollUpLoaded(ctx, fx.s, t0.Add(-time.Hour), t0.Add(3*time.Hour)); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkPass1000GPUs times one analyzer pass over fleetGPUs's data, with every
// detector (the first pass, and then every hint_interval) and with the hint
// detectors skipped (the passes in between). It reports the process's RSS before
// the passes and its peak during them (both include the embedded ClickHouse engine,
// whose query memory is most of a pass's), the Go heap in use, and Go allocations
// per pass.
//
// GPUPOOL_BENCH_PASS_GPUS sets the fleet's size (1,000 unless set; at 10,000 the
// data takes minutes to generate and merge).
func BenchmarkPass1000GPUs(b *testing.B) {
	n := 1000
	if v := os.Getenv("GPUPOOL_BENCH_PASS_GPUS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 8 || n%8 != 0 {
			b.Fatalf("GPUPOOL_BENCH_PASS_GPUS=%q: want a multiple of 8 GPUs", v)
		}
	}
	fx := newFixture(b)
	t0 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	start := time.Now()
	fleetGPUs(b, fx, t0, n)
	b.Logf("generated 2 h of %d GPUs at 1 Hz (%.1f M GPU rows, as many process rows) in %v", n, float64(n)*7200/1e6, time.Since(start).Round(time.Millisecond))
	// Merge the generated parts, as background merges keep a live table merged, so
	// a pass does not pay for (or race) the merges of the data load.
	for _, t := range []string{"gpu_samples", "process_samples"} {
		if err := fx.s.Exec(b.Context(), "OPTIMIZE TABLE "+t+" FINAL", nil); err != nil {
			b.Fatal(err)
		}
	}
	end := t0.Add(2 * time.Hour)
	for _, full := range []bool{true, false} {
		name := "all_detectors"
		if !full {
			name = "no_hints"
		}
		b.Run(name, func(b *testing.B) {
			cfg := DefaultConfig()
			if !full {
				// The passes between hint intervals: idle, zombie and hung.
				cfg.Defaults.MemoryBound.Enabled, cfg.Defaults.WrongCard.Enabled, cfg.Defaults.LowUtil.Enabled = false, false, false
				cfg.Defaults.MemoryCapacity.Enabled, cfg.Defaults.ComputeBound.Enabled = false, false
				cfg.Pools = builtinPools(cfg.Defaults)
			}
			// Reset the peak RSS (Linux: clear_refs 5), so VmHWM is the passes' peak.
			_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
			rssBefore := rssKiB("VmRSS")
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			var res RunResult
			b.ReportAllocs()
			for b.Loop() {
				// A new analyzer each time, so that every pass runs the hint
				// detectors when they are on (a repeated pass at the same time finds
				// its findings open and writes updated versions).
				a := fx.analyzer(cfg, &fakeBus{})
				var err error
				if res, err = a.Run(b.Context(), end); err != nil {
					b.Fatal(err)
				}
			}
			runtime.ReadMemStats(&ms1)
			b.ReportMetric(float64(rssBefore)/1024, "rss_before_MiB")
			b.ReportMetric(float64(rssKiB("VmHWM"))/1024, "pass_peak_rss_MiB")
			b.ReportMetric(float64(ms1.HeapInuse)/(1<<20), "go_heap_inuse_MiB")
			b.Logf("%s: last pass detected %v; %d open", name, res.Detected, res.Open)
		})
	}
}

// rssKiB reads a VmRSS/VmHWM figure of this process from /proc, in KiB (0 off Linux).
func rssKiB(field string) int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			var kib int64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), &kib)
			return kib
		}
	}
	return 0
}
