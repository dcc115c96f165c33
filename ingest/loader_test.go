package ingest_test

import (
	"testing"
	"time"

	"github.com/gpupool/gpupool/collector/sim"
	"github.com/gpupool/gpupool/ingest"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

func TestLoaderLoadsASimulation(t *testing.T) {
	ctx := t.Context()
	s := chdbtest.Open(t)
	if _, err := store.Migrate(ctx, s, schemas.MigrationParams{RawTTLDays: 3650}); err != nil {
		t.Fatal(err)
	}
	cfg := sim.DefaultConfig()
	cfg.Clusters, cfg.NodesPerCluster = 1, 2
	cfg.Start = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC) // far in the past: no skew check
	fleet, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l := ingest.NewLoader(s, 5000)
	var gpuRows, procRows, jobEvents int
	for k := 0; k < 360; k++ {
		at := cfg.Start.Add(time.Duration(k) * cfg.Tick)
		events := fleet.Advance(at)
		jobEvents += len(events)
		if err := l.AddJobs(ctx, events); err != nil {
			t.Fatal(err)
		}
		for _, n := range fleet.Nodes() {
			b := &schemas.SampleBatch{Cluster: n.Cluster(), Node: n.Name()}
			if err := n.Sample(ctx, at, b); err != nil {
				t.Fatal(err)
			}
			gpuRows, procRows = gpuRows+len(b.GPUs), procRows+len(b.Processes)
			if err := l.AddSamples(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := l.Loaded(), uint64(gpuRows+procRows+jobEvents); got != want {
		t.Fatalf("loaded %d rows, want %d", got, want)
	}
	assertExact(t, s, uint64(gpuRows), uint64(procRows), uint64(jobEvents))
	bad := &schemas.SampleBatch{Cluster: "c", Node: "n", GPUs: []schemas.GPUSample{schemas.NewGPUSample()}}
	bad.GPUs[0].TimeMs, bad.GPUs[0].GPUUUID, bad.GPUs[0].SMActive = 1, "GPU-x", 3
	if err := l.AddSamples(ctx, bad); err == nil {
		t.Fatal("a ratio of 3 was loaded")
	}
}
