package sim

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/gpupool/gpupool/bus/bustest"
	"github.com/gpupool/gpupool/collector"
	"github.com/gpupool/gpupool/schemas"
)

// tinyDriverConfig is one cluster of two 2-GPU nodes for ticks one-minute ticks.
func tinyDriverConfig(ticks int) DriverConfig {
	fc := testConfig(3)
	fc.Clusters, fc.NodesPerCluster, fc.GPUsPerNode, fc.Tick = 1, 2, 2, time.Minute
	cc := collector.DefaultConfig()
	cc.Interval = time.Minute
	return DriverConfig{Fleet: fc, Collector: cc, End: fc.Start.Add(time.Duration(ticks) * fc.Tick)}
}

// countingRecorder counts what it is asked to record.
type countingRecorder struct {
	mu                 sync.Mutex
	batches, jobEvents int
	gpuRows, procRows  int
}

func (r *countingRecorder) RecordBatch(b *schemas.SampleBatch) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.batches++
	r.gpuRows += len(b.GPUs)
	r.procRows += len(b.Processes)
	return nil
}

func (r *countingRecorder) RecordJobs(events []schemas.JobEvent) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.jobEvents += len(events)
	return nil
}

// TestDriverPublishesTicks runs a tiny fleet for a number of ticks against the
// embedded NATS server: what the driver says it published is what the streams
// hold and what it recorded, and the tick hook saw every tick.
func TestDriverPublishesTicks(t *testing.T) {
	const ticks = 60
	b := bustest.Start(t)
	cfg := tinyDriverConfig(ticks)
	rec := &countingRecorder{}
	d, err := NewDriver(cfg, b.JS, WithRecorder(rec))
	if err != nil {
		t.Fatal(err)
	}
	var seen []time.Time
	d.OnTick(func(now time.Time) { seen = append(seen, now) })
	if err := d.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if d.Nodes() != 2 || d.GPUCount() < 4 {
		t.Errorf("%d nodes, %d GPU units; want 2 nodes and at least 4 units", d.Nodes(), d.GPUCount())
	}
	if !d.Now().Equal(cfg.End) || !d.Start().Equal(cfg.Fleet.Start) || !d.End().Equal(cfg.End) {
		t.Errorf("start %s, now %s, end %s; want %s, %s, %s", d.Start(), d.Now(), d.End(), cfg.Fleet.Start, cfg.End, cfg.End)
	}
	if len(seen) != ticks || !seen[0].Equal(cfg.Fleet.Start.Add(time.Minute)) || !seen[ticks-1].Equal(cfg.End) {
		t.Errorf("tick hook saw %d ticks (%v … %v), want %d ending at %s", len(seen), seen[0], seen[len(seen)-1], ticks, cfg.End)
	}
	if fs := d.FleetStats(); fs.GPUs != d.GPUCount() || !fs.Now.Equal(cfg.End.Add(-time.Minute)) {
		t.Errorf("fleet stats %+v", fs)
	}
	pub := d.Published()
	got := b.Stored(t)
	if pub.Batches != ticks*2 || got.SampleBatches != pub.Batches || got.GPURows != pub.GPURows || got.ProcessRows != pub.ProcessRows {
		t.Errorf("published %+v, the samples stream holds %+v", pub, got)
	}
	if d.JobEvents() == 0 || got.JobEvents != d.JobEvents() {
		t.Errorf("published %d job events, the jobs stream holds %d", d.JobEvents(), got.JobEvents)
	}
	if uint64(rec.batches) != pub.Batches || uint64(rec.gpuRows) != pub.GPURows || uint64(rec.procRows) != pub.ProcessRows ||
		uint64(rec.jobEvents) != d.JobEvents() {
		t.Errorf("recorded %+v, published %+v and %d job events", rec, pub, d.JobEvents())
	}
}

// TestDriverStopsWithContext: a run without an end stops when ctx ends, with its
// error.
func TestDriverStopsWithContext(t *testing.T) {
	b := bustest.Start(t)
	cfg := tinyDriverConfig(0)
	cfg.End, cfg.Speed = time.Time{}, 60 // a tick a second
	d, err := NewDriver(cfg, b.JS)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	d.OnTick(func(time.Time) { cancel() })
	if err := d.Run(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	if !d.Now().Equal(cfg.Fleet.Start.Add(time.Minute)) {
		t.Errorf("stopped at %s, want after the first tick", d.Now())
	}
}

func TestNewDriverValidates(t *testing.T) {
	b := bustest.Start(t)
	tests := []struct {
		name string
		edit func(*DriverConfig)
	}{
		{"negative speed", func(c *DriverConfig) { c.Speed = -1 }},
		{"end before start", func(c *DriverConfig) { c.End = c.Fleet.Start.Add(-time.Minute) }},
		{"bad fleet", func(c *DriverConfig) { c.Fleet.Clusters = 0 }},
		{"bad collector", func(c *DriverConfig) { c.Collector.Interval = 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tinyDriverConfig(1)
			tt.edit(&cfg)
			if _, err := NewDriver(cfg, b.JS); err == nil {
				t.Fatal("no error")
			}
		})
	}
	if _, err := NewDriver(tinyDriverConfig(1), nil); err == nil {
		t.Error("no error without a publisher")
	}
}

// TestDriverNotAhead: a run as fast as possible from three ticks before now
// publishes the ticks up to now at once, then waits for the clock: it never
// publishes a sample from the future (without NotAhead it would run on at once).
func TestDriverNotAhead(t *testing.T) {
	b := bustest.Start(t)
	cfg := tinyDriverConfig(0)
	now := cfg.Fleet.Start.Add(3 * time.Minute)
	cfg.End, cfg.Speed, cfg.NotAhead, cfg.Now = time.Time{}, 0, true, func() time.Time { return now }
	d, err := NewDriver(cfg, b.JS)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	reached := make(chan time.Time, 100)
	d.OnTick(func(at time.Time) { reached <- at })
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	for want := cfg.Fleet.Start.Add(time.Minute); !want.After(now.Add(time.Minute)); want = want.Add(time.Minute) {
		select {
		case at := <-reached:
			if !at.Equal(want) {
				t.Fatalf("reached %s, want %s", at, want)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("the driver did not reach %s", want)
		}
	}
	// The next tick is a minute after now: the driver waits for the clock.
	select {
	case at := <-reached:
		t.Fatalf("published the tick of %s, after now (%s)", at.Add(-time.Minute), now)
	case <-time.After(300 * time.Millisecond):
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v", err)
	}
}
