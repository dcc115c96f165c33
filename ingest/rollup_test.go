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

// rollupColumns are process_minute's columns, compared in this order (cluster and
// node, any() of the key's rows, apart).
const rollupColumns = "gpu_uuid, job, minute, samples, fb_used_mib_sum, fb_used_mib_max, " +
	"sm_util_sum, sm_util_samples, mem_util_sum, mem_util_samples, judged_samples, active_samples"

// viewQuery is the SELECT of process_minute_mv as migration 0013 last defined it:
// what the engine wrote into process_minute before migration 0020 handed the
// rollup to ingest. Taken from the migration itself, so the comparison is with the
// view that ran, not a copy of it.
func viewQuery(t *testing.T, db string) string {
	t.Helper()
	ms, err := schemas.Migrations(schemas.MigrationParams{DB: db, RawTTLDays: 3650})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.Version != 13 {
			continue
		}
		for _, q := range m.Statements {
			if strings.Contains(q, "process_minute_mv") && strings.Contains(q, "MODIFY QUERY") {
				return q[strings.Index(q, "MODIFY QUERY")+len("MODIFY QUERY"):]
			}
		}
	}
	t.Fatal("migration 0013 has no MODIFY QUERY of process_minute_mv")
	return ""
}

// assertRollupMatchesView checks that process_minute holds, per (GPU, job, minute),
// exactly what the old materialized view computes from the process samples
// stored: every sample rolled up once, whatever batches, redeliveries and crashes
// they came through.
func assertRollupMatchesView(t *testing.T, s store.Store) {
	t.Helper()
	ctx := t.Context()
	want, err := s.Query(ctx, "SELECT "+rollupColumns+" FROM ("+viewQuery(t, s.Database())+") ORDER BY gpu_uuid, job, minute", nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Query(ctx, `SELECT gpu_uuid, job, minute,
		sum(samples) AS samples, sum(fb_used_mib_sum) AS fb_used_mib_sum, toUInt32(max(fb_used_mib_max)) AS fb_used_mib_max,
		sum(sm_util_sum) AS sm_util_sum, sum(sm_util_samples) AS sm_util_samples,
		sum(mem_util_sum) AS mem_util_sum, sum(mem_util_samples) AS mem_util_samples,
		sum(judged_samples) AS judged_samples, sum(active_samples) AS active_samples
		FROM process_minute GROUP BY gpu_uuid, job, minute ORDER BY gpu_uuid, job, minute`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Rows) != len(want.Rows) {
		t.Fatalf("process_minute has %d (GPU, job, minute) rows, the view over process_samples %d", len(got.Rows), len(want.Rows))
	}
	bad := 0
	for r := range want.Rows {
		for c, name := range strings.Split(rollupColumns, ", ") {
			g, w := got.Rows[r][c], want.Rows[r][c]
			if c >= 3 { // the counts and sums: numbers, whatever Go type the engine's type reads as
				gf, err1 := got.Float(r, name)
				wf, err2 := want.Float(r, name)
				if err1 == nil && err2 == nil && math.Abs(gf-wf) <= 1e-9*max(1, math.Abs(wf)) {
					continue // sums of floats to their rounding: batches add in another order
				}
			} else if store.FormatValue(g) == store.FormatValue(w) {
				continue
			}
			if bad++; bad <= 5 {
				t.Errorf("process_minute row %d (%v %v %v) %s = %v, the view gives %v", r, want.Rows[r][0], want.Rows[r][1], want.Rows[r][2], name, g, w)
			}
		}
	}
	if bad > 5 {
		t.Errorf("... %d differences in all", bad)
	}
	// any(cluster), any(node): one of the key's own.
	for _, c := range []string{"cluster", "node"} {
		q := "SELECT count() AS n FROM process_minute WHERE (gpu_uuid, job, minute, " + c + ") NOT IN " +
			"(SELECT gpu_uuid, job, toStartOfMinute(ts), " + c + " FROM process_samples)"
		if n := count(t, s, q); n != 0 {
			t.Errorf("%d process_minute rows have a %s none of their samples has", n, c)
		}
	}
}

// TestRollupEdgeCases loads samples that exercise each of the rollup's rules — a
// NULL SM or memory share, a share just under and just over the 1 % threshold, memory
// active while SM is not, an unattributed process, two jobs on one GPU, a minute
// boundary, one key split across batches — and compares process_minute with the
// view.
func TestRollupEdgeCases(t *testing.T) {
	ctx := t.Context()
	s := chdbtest.Open(t)
	if _, err := store.Migrate(ctx, s, schemas.MigrationParams{RawTTLDays: 3650}); err != nil {
		t.Fatal(err)
	}
	l := ingest.NewLoader(s, 7) // small batches: a (GPU, job, minute) spans several
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
		if err := l.AddSamples(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := l.Loaded(), uint64(12*len(shares)); got != want {
		t.Errorf("loaded %d rows, want %d (rollup rows are not samples)", got, want)
	}
	if n := count(t, s, "SELECT count() AS n FROM process_minute"); n <= 12 {
		t.Errorf("process_minute has %d rows: the small batches should split keys across rows", n)
	}
	if n := count(t, s, "SELECT toUInt64(sum(active_samples)) AS n FROM process_minute"); n == 0 {
		t.Error("no active samples rolled up")
	}
	assertRollupMatchesView(t, s)
}
