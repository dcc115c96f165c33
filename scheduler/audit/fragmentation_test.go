package audit

import (
	"math"
	"testing"
	"time"

	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/scheduler/placement"
	"github.com/gpupool/gpupool/store"
)

// TestStoreRecorderFragmentation: samples recorded (twice, and in a batch
// overlapping the first) are stored once each, and fragmentation_hourly
// integrates them: each sample stands for the time to the next of its cluster
// and card, at most 15 minutes, in its own hour; the last counts nothing.
func TestStoreRecorderFragmentation(t *testing.T) {
	s := openStore(t)
	r := NewStoreRecorder(s)
	at := func(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }
	h100 := func(min, free, stranded, waiting int) scheduler.FragmentationSample {
		return scheduler.FragmentationSample{Time: at(min), Fragmentation: placement.Fragmentation{
			Cluster: "c1", Card: "H100-80GB", GPUs: 8, Free: free, Stranded: stranded, Waiting: waiting, FreeNodes: 0, LargestOnNode: 1}}
	}
	// 09:00, 09:01, 09:02, then a gap to 09:40 (counts 15 min), 10:00 (20 min
	// later: 15), 10:01 (the last: nothing).
	samples := []scheduler.FragmentationSample{
		h100(0, 2, 2, 1), h100(1, 4, 4, 3), h100(2, 1, 0, 0), h100(40, 3, 3, 2), h100(60, 1, 1, 1), h100(61, 5, 5, 4),
		{Time: at(5), Fragmentation: placement.Fragmentation{Cluster: "c1", Card: "L40S-48GB", GPUs: 8, Free: 8, Stranded: 0, FreeNodes: 1, LargestOnNode: 8}},
	}
	for range 2 {
		if err := r.RecordFragmentation(t.Context(), samples); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.RecordFragmentation(t.Context(), samples[2:4]); err != nil {
		t.Fatal(err)
	}
	res, err := s.Query(t.Context(), "SELECT count() AS n FROM "+s.Database()+".scheduler_fragmentation FINAL", nil)
	if err != nil {
		t.Fatal(err)
	}
	if rows := store.Read(res, "count"); !rows.Next() || rows.Int("n") != int64(len(samples)) {
		t.Fatalf("stored rows: want %d, one per sample", len(samples))
	}
	res, err = s.Query(t.Context(), "SELECT hour, cluster, card, samples, sampled_hours, gpus, mean_free_gpus, mean_stranded_gpus, "+
		"free_gpu_hours, stranded_gpu_hours, max_stranded_gpus, max_waiting FROM "+s.Database()+".fragmentation_hourly ORDER BY hour, card", nil)
	if err != nil {
		t.Fatal(err)
	}
	type hourRow struct {
		hour                                           time.Time
		card                                           string
		samples, gpus, maxStranded, maxWaiting         int64
		sampled, meanFree, meanStranded, freeH, stranH float64
	}
	// By hand: 09:00 2×1 + 4×1 + 0×15 + 3×15 = 51 GPU-min stranded over 32 min;
	// free 2 + 4 + 15 + 45 = 66 GPU-min. 10:00 1×1 = 1 GPU-min over 1 min.
	want := []hourRow{
		{t0, "H100-80GB", 4, 8, 4, 3, 32.0 / 60, 66.0 / 32, 51.0 / 32, 66.0 / 60, 51.0 / 60},
		{t0, "L40S-48GB", 1, 8, 0, 0, 0, 8, 0, 0, 0},
		{t0.Add(time.Hour), "H100-80GB", 2, 8, 5, 4, 1.0 / 60, 1, 1, 1.0 / 60, 1.0 / 60},
	}
	rows := store.Read(res, "fragmentation_hourly")
	var got []hourRow
	for rows.Next() {
		got = append(got, hourRow{rows.Time("hour"), rows.Str("card"), rows.Int("samples"), rows.Int("gpus"), rows.Int("max_stranded_gpus"),
			rows.Int("max_waiting"), rows.Float("sampled_hours"), rows.Float("mean_free_gpus"), rows.Float("mean_stranded_gpus"),
			rows.Float("free_gpu_hours"), rows.Float("stranded_gpu_hours")})
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("got %d hours %+v, want %d", len(got), got, len(want))
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	for i, w := range want {
		g := got[i]
		if !g.hour.Equal(w.hour) || g.card != w.card || g.samples != w.samples || g.gpus != w.gpus || g.maxStranded != w.maxStranded ||
			g.maxWaiting != w.maxWaiting || !near(g.sampled, w.sampled) || !near(g.meanFree, w.meanFree) ||
			!near(g.meanStranded, w.meanStranded) || !near(g.freeH, w.freeH) || !near(g.stranH, w.stranH) {
			t.Errorf("hour %d:\ngot  %+v\nwant %+v", i, g, w)
		}
	}
}
