package ingest_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/ingest"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

// rollup is one of the tables ingest rolls its batches up into, and the
// materialized view that wrote it before (migrations 0020 and 0021).
type rollup struct {
	table, view, raw string
	keys             []string // the key columns, the time last
	// sums, maxes and mins are the aggregates compared, read back from the rollup
	// as sum(c), max(c) and min(c); anys are any() of the key's rows.
	sums, maxes, mins, anys []string
	// added is the columns added since the view was dropped, as RollUpLoaded
	// appends them to the view's select.
	added string
}

var rollups = []rollup{
	{table: "process_minute", view: "process_minute_mv", raw: "process_samples",
		keys: []string{"gpu_uuid", "job", "minute"},
		sums: []string{"samples", "fb_used_mib_sum", "sm_util_sum", "sm_util_samples", "mem_util_sum",
			"mem_util_samples", "judged_samples", "active_samples", "sample_times"},
		maxes: []string{"fb_used_mib_max"}, anys: []string{"cluster", "node"}, added: ingest.ProcessMinuteAdded},
	{table: "gpu_minute", view: "gpu_minute_mv", raw: "gpu_samples",
		keys: []string{"gpu_uuid", "minute"}, sums: gpuSums, maxes: gpuMaxes, mins: gpuMins, anys: gpuAnys},
	{table: "gpu_hour", view: "gpu_hour_mv", raw: "gpu_samples",
		keys: []string{"gpu_uuid", "hour"}, sums: gpuSums, maxes: gpuMaxes, mins: gpuMins, anys: gpuAnys},
}

var (
	gpuSums = []string{"samples", "activity_samples", "active_samples", "gr_engine_active_sum",
		"gr_engine_active_samples", "sm_active_sum", "sm_active_samples", "tensor_active_sum",
		"tensor_active_samples", "dram_active_sum", "dram_active_samples", "fb_used_mib_sum",
		"power_w_sum", "power_samples", "xid_samples"}
	gpuMaxes = []string{"fb_used_mib_max", "energy_mj_max"}
	gpuMins  = []string{"energy_mj_min"}
	gpuAnys  = []string{"cluster", "node", "card", "mig_profile"}
)

// assertRollupMatchesView checks that each rollup holds, per key, exactly what its
// old materialized view computes from the samples stored (the view's query as the
// migrations last defined it, so the comparison is with the view that ran, not a
// copy of it): every sample rolled up once, whatever batches, redeliveries and
// crashes they came through.
func assertRollupMatchesView(t *testing.T, s store.Store) {
	t.Helper()
	for _, r := range rollups {
		r.assertMatchesView(t, s)
	}
}

func (r rollup) assertMatchesView(t *testing.T, s store.Store) {
	t.Helper()
	ctx := t.Context()
	view, err := schemas.ViewQuery(schemas.MigrationParams{DB: s.Database(), RawTTLDays: 3650}, r.view)
	if err != nil {
		t.Fatal(err)
	}
	view = strings.Replace(view, "\nFROM "+s.Database()+"."+r.raw+"\n", r.added+"\nFROM "+s.Database()+"."+r.raw+"\n", 1)
	keys := strings.Join(r.keys, ", ")
	var cols, read []string
	for agg, cs := range map[string][]string{"sum": r.sums, "max": r.maxes, "min": r.mins} {
		for _, c := range cs {
			cols = append(cols, c)
			read = append(read, agg+"("+c+") AS "+c)
		}
	}
	want, err := s.Query(ctx, "SELECT "+keys+", "+strings.Join(cols, ", ")+" FROM ("+view+") ORDER BY "+keys, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Query(ctx, "SELECT "+keys+", "+strings.Join(read, ", ")+" FROM "+r.table+" GROUP BY "+keys+" ORDER BY "+keys, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Rows) != len(want.Rows) {
		t.Fatalf("%s has %d keys, the view over %s %d", r.table, len(got.Rows), r.raw, len(want.Rows))
	}
	bad := 0
	for row := range want.Rows {
		for c, name := range append(append([]string{}, r.keys...), cols...) {
			g, w := got.Rows[row][c], want.Rows[row][c]
			if c >= len(r.keys) { // the counts and sums: numbers, whatever Go type the engine's type reads as
				gf, err1 := got.Float(row, name)
				wf, err2 := want.Float(row, name)
				if err1 == nil && err2 == nil && math.Abs(gf-wf) <= 1e-9*max(1, math.Abs(wf)) {
					continue // sums of floats to their rounding: batches add in another order
				}
			} else if store.FormatValue(g) == store.FormatValue(w) {
				continue
			}
			if bad++; bad <= 5 {
				t.Errorf("%s row %d %v %s = %v, the view gives %v", r.table, row, want.Rows[row][:len(r.keys)], name, g, w)
			}
		}
	}
	if bad > 5 {
		t.Errorf("... %d differences in all", bad)
	}
	// any(): one of the key's own.
	period := "toStartOfMinute(ts)"
	if r.keys[len(r.keys)-1] == "hour" {
		period = "toStartOfHour(ts)"
	}
	for _, c := range r.anys {
		q := "SELECT count() AS n FROM " + r.table + " WHERE (" + keys + ", " + c + ") NOT IN " +
			"(SELECT " + strings.Join(r.keys[:len(r.keys)-1], ", ") + ", " + period + ", " + c + " FROM " + r.raw + ")"
		if n := count(t, s, q); n != 0 {
			t.Errorf("%d %s rows have a %s none of their samples has", n, r.table, c)
		}
	}
}

// TestRollupEdgeCases loads samples that exercise each of the rollups' rules and
// compares every rollup with its view. Processes: a NULL SM or memory share, a
// share just under and just over the 1 % threshold, memory active while SM is not,
// an unattributed process, two jobs on one GPU. GPUs: activity from the engine or
// from NVML's utilisation, neither, DRAM or PCIe (each direction under the
// threshold, the two over it) active while the engine is not, NULL power, XIDs, a
// falling energy counter (a reset), a MIG instance. And a minute, hour and month
// boundary, one key split across batches.
func TestRollupEdgeCases(t *testing.T) {
	ctx := t.Context()
	s := chdbtest.Open(t)
	if _, err := store.Migrate(ctx, s, schemas.MigrationParams{RawTTLDays: 3650}); err != nil {
		t.Fatal(err)
	}
	l := ingest.NewLoader(s, 30) // small batches: a minute of a GPU spans several, holding 2 or 3 ticks each
	start := time.Date(2026, 11, 30, 23, 59, 30, 0, time.UTC)
	nan := schemas.Missing
	// Ratios are stored in steps of 1/512: 5/512 is the last under 1 %, 6/512 the
	// first at or over it.
	const under, over = 5.0 / 512, 6.0 / 512
	shares := [][2]float32{{0.5, 0.2}, {nan, 0.3}, {0.2, nan}, {nan, nan}, {under, 0}, {over, 0}, {0, over}, {2.0 / 512, 10.0 / 512}, {0, 0}}
	for k := 0; k < 12; k++ {
		at := start.Add(time.Duration(k) * 10 * time.Second).UnixMilli()
		b := &schemas.SampleBatch{Cluster: "c1", Node: "n1"}
		for i, sh := range shares {
			job := []string{"k8s/a/p1", "k8s/b/p2", ""}[i%3]
			// Memory falls along a batch and goes up and down over time: a key's largest is not its last.
			b.Processes = append(b.Processes, schemas.ProcessSample{
				TimeMs: at, GPUUUID: []string{"GPU-0", "GPU-1"}[i%2], PID: uint32(100 + i), ProcessName: "python3",
				Job: job, FBUsedMiB: uint32(1000*(9-i) + (k*5)%12), SMUtil: sh[0], MemUtil: sh[1],
			})
		}
		for i := range 3 {
			// Each GPU goes through the cases, a different one each tick.
			c := gpuCases[(i+k)%len(gpuCases)]
			uuid, mig := []string{"GPU-0", "GPU-1", "MIG-1-a"}[i], []string{"", "", "1g.10gb"}[i]
			power := float32(100 + 10*k + i)
			if (i+k)%4 == 0 {
				power = nan
			}
			b.GPUs = append(b.GPUs, schemas.GPUSample{
				TimeMs: at, GPUUUID: uuid, GPUIndex: uint32(i), Model: "NVIDIA H100 80GB HBM3", Card: "H100-80GB",
				MIGProfile: mig, FBTotalMiB: 81559, FBUsedMiB: uint32(20000 - 100*k + 7*((k*5)%12)),
				GrEngineActive: c.gr, SMActive: c.gr, SMOccupancy: nan, TensorActive: c.tensor, DRAMActive: c.dram,
				GPUUtil: c.util, PCIeTxBytesPerS: c.tx, PCIeRxBytesPerS: c.rx, PowerW: power,
				EnergyMilliJ: uint64(1_000_000*(i+1) + 5000*((k*7)%12)), TempC: 50, XID: []uint32{0, 0, 79}[(i+k)%3],
			})
		}
		if err := l.AddSamples(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	// A node whose message holds twelve ticks of its one GPU: consecutive rows of a
	// GPU cross a minute and an hour.
	solo := &schemas.SampleBatch{Cluster: "c1", Node: "n2"}
	for k := range 12 {
		c := gpuCases[k%len(gpuCases)]
		solo.GPUs = append(solo.GPUs, schemas.GPUSample{
			TimeMs: start.Add(time.Duration(k) * 10 * time.Second).UnixMilli(), GPUUUID: "GPU-solo", Card: "L4",
			FBTotalMiB: 22491, FBUsedMiB: uint32(1000 + 300*((k*5)%12)), GrEngineActive: c.gr, SMActive: nan,
			SMOccupancy: nan, TensorActive: nan, DRAMActive: c.dram, GPUUtil: c.util, PCIeTxBytesPerS: c.tx,
			PCIeRxBytesPerS: c.rx, PowerW: 40, EnergyMilliJ: uint64(9000 - 100*k), TempC: nan,
		})
	}
	if err := l.AddSamples(ctx, solo); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := l.Loaded(), uint64(12*len(shares)+12*3+12); got != want {
		t.Errorf("loaded %d rows, want %d (rollup rows are not samples)", got, want)
	}
	for _, q := range []string{
		"SELECT count() AS n FROM gpu_minute",
		"SELECT toUInt64(sum(active_samples)) AS n FROM gpu_minute",
		"SELECT toUInt64(sum(xid_samples)) AS n FROM gpu_hour",
		"SELECT toUInt64(countIf(activity_samples < samples)) AS n FROM gpu_hour",
	} {
		if n := count(t, s, q); n == 0 {
			t.Errorf("%s: 0, want some", q)
		}
	}
	if n := count(t, s, "SELECT count() AS n FROM process_minute"); n <= 12 {
		t.Errorf("process_minute has %d rows: the small batches should split keys across rows", n)
	}
	if n := count(t, s, "SELECT toUInt64(sum(active_samples)) AS n FROM process_minute"); n == 0 {
		t.Error("no active samples rolled up")
	}
	assertRollupMatchesView(t, s)
}

// gpuCases are GPU samples on each side of the rollups' activity rules.
var gpuCases = func() []struct{ gr, util, dram, tensor, tx, rx float32 } {
	nan := schemas.Missing
	const under, over = 5.0 / 512, 6.0 / 512
	return []struct{ gr, util, dram, tensor, tx, rx float32 }{
		{gr: 0.5, util: 0.9, dram: 0.2, tensor: 0.1, tx: 1e6, rx: 2e6},
		{gr: nan, util: 0.3, dram: nan, tensor: nan, tx: nan, rx: nan}, // NVML only: measured, active
		{gr: nan, util: nan, dram: 0.5, tensor: nan, tx: 2e8, rx: 2e8}, // not measured, so never active
		{gr: under, util: 0.9, dram: 0, tensor: 0, tx: 0, rx: 0},       // the engine says idle
		{gr: over, util: 0, dram: 0, tensor: 0, tx: 0, rx: 0},          // just active
		{gr: 0, util: 0, dram: over, tensor: 0, tx: 0, rx: 0},          // memory busy
		{gr: 0, util: 0, dram: under, tensor: 0, tx: 6e7, rx: 5e7},     // the loader busy: 110 MB/s
		{gr: 0, util: 0, dram: under, tensor: 0, tx: 5e7, rx: 4e7},     // 90 MB/s: idle
		{gr: 0, util: 0, dram: nan, tensor: 0, tx: nan, rx: 1.5e8},     // one direction NULL
		{gr: nan, util: 0, dram: over, tensor: nan, tx: nan, rx: nan},  // NVML only, memory busy
	}
}()

// TestRollUpLoaded bulk-loads samples by SQL, as a backfill does, and rolls them up
// an hour at a time: each window's samples once, none outside it.
func TestRollUpLoaded(t *testing.T) {
	ctx := t.Context()
	s := chdbtest.Open(t)
	if _, err := store.Migrate(ctx, s, schemas.MigrationParams{RawTTLDays: 3650}); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 30, 22, 0, 0, 0, time.UTC)
	for _, q := range []string{
		`INSERT INTO gpu_samples (ts, cluster, node, gpu_uuid, card, fb_used_mib, gr_engine_active, dram_active, power_w, energy_mj)
		 SELECT {t0:DateTime64(3, 'UTC')} + toIntervalSecond(number * 30), 'c1', 'n1', 'GPU-' || toString(number % 3), 'H100-80GB',
		        1000 + number, if(number % 5 = 0, NULL, (number % 7) / 8), 0.25, 300, 1000 * number
		 FROM numbers(240)`,
		`INSERT INTO process_samples (ts, cluster, node, gpu_uuid, pid, job, fb_used_mib, sm_util, mem_util)
		 SELECT {t0:DateTime64(3, 'UTC')} + toIntervalSecond(number * 30), 'c1', 'n1', 'GPU-' || toString(number % 3), 7,
		        'j' || toString(number % 2), 500, (number % 4) / 8, NULL
		 FROM numbers(240)`,
	} {
		if err := s.Exec(ctx, q, store.Params{"t0": t0.Format("2006-01-02 15:04:05")}); err != nil {
			t.Fatal(err)
		}
	}
	if err := ingest.RollUpLoaded(ctx, s, t0, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"SELECT toUInt64(sum(samples)) AS n FROM gpu_hour",
		"SELECT toUInt64(sum(samples)) AS n FROM gpu_minute WHERE minute < '2026-11-30 23:00:00'",
		"SELECT toUInt64(sum(samples)) AS n FROM process_minute",
	} {
		if n := count(t, s, q); n != 120 {
			t.Errorf("%s = %d after the first hour, want its 120 samples", q, n)
		}
	}
	if err := ingest.RollUpLoaded(ctx, s, t0.Add(time.Hour), t0.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	assertRollupMatchesView(t, s)
}
