package replay_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/gpupool/gpupool/bus/bustest"
	"github.com/gpupool/gpupool/collector"
	"github.com/gpupool/gpupool/collector/replay"
	"github.com/gpupool/gpupool/collector/sim"
	"github.com/gpupool/gpupool/schemas/trace"
)

// TestDriverReplaysARecording records a tiny simulated fleet to a trace, plays the
// trace into a second server and finds there what the fleet published.
func TestDriverReplaysARecording(t *testing.T) {
	fc := sim.DefaultConfig()
	fc.Seed, fc.Start = 5, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	fc.Clusters, fc.NodesPerCluster, fc.GPUsPerNode, fc.Tick = 1, 2, 2, time.Minute
	cc := collector.DefaultConfig()
	cc.Interval = time.Minute

	var buf bytes.Buffer
	rec := replay.NewRecorder(trace.NewWriter(&buf, false))
	live := bustest.Start(t)
	s, err := sim.NewDriver(sim.DriverConfig{Fleet: fc, Collector: cc, End: fc.Start.Add(45 * time.Minute)}, live.JS, sim.WithRecorder(rec))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}

	p, err := replay.New(trace.NewReader(&buf, trace.ReaderOptions{Strict: true}), replay.DefaultConfig()) // as fast as possible
	if err != nil {
		t.Fatal(err)
	}
	played := bustest.Start(t)
	d, err := replay.NewDriver(p, cc, played.JS)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	want, pub, got := s.Published(), d.Published(), played.Stored(t)
	if d.Ticks() < 45 || pub.Batches != want.Batches || pub.GPURows != want.GPURows || pub.ProcessRows != want.ProcessRows {
		t.Errorf("replayed %d ticks, published %+v; the fleet published %+v", d.Ticks(), pub, want)
	}
	if got.SampleBatches != pub.Batches || got.GPURows != pub.GPURows || got.ProcessRows != pub.ProcessRows {
		t.Errorf("published %+v, the samples stream holds %+v", pub, got)
	}
	if s.JobEvents() == 0 || d.JobEvents() != s.JobEvents() || got.JobEvents != d.JobEvents() {
		t.Errorf("job events: the fleet published %d, the replay %d, the stream holds %d", s.JobEvents(), d.JobEvents(), got.JobEvents)
	}
}

func TestNewDriverNeedsPlayerAndPublisher(t *testing.T) {
	b := bustest.Start(t)
	if _, err := replay.NewDriver(nil, collector.DefaultConfig(), b.JS); err == nil {
		t.Error("no error without a player")
	}
	p, err := replay.New(trace.NewReader(&bytes.Buffer{}, trace.ReaderOptions{}), replay.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := replay.NewDriver(p, collector.DefaultConfig(), nil); err == nil {
		t.Error("no error without a publisher")
	}
}
