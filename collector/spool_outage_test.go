package collector_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/bus/bustest"
	"github.com/gpupool/gpupool/collector"
	"github.com/gpupool/gpupool/collector/spool"
	"github.com/gpupool/gpupool/schemas"
)

// clockedSource is a source the test drives: two GPUs, sampled at the time the
// test passes to Collect, so a long outage takes no wall time.
type clockedSource struct{}

func (clockedSource) Sample(_ context.Context, at time.Time, b *schemas.SampleBatch) error {
	for g := range 2 {
		s := schemas.NewGPUSample()
		s.TimeMs, s.GPUUUID, s.GPUIndex = at.UnixMilli(), fmt.Sprintf("GPU-%d", g), uint32(g)
		b.GPUs = append(b.GPUs, s)
	}
	return nil
}

// TestSpoolThroughLongOutage: NATS is down for ten minutes of the collector's
// clock (600 ticks of 1 s, driven by the test) while it samples a source the
// test controls; the batches go to the spool on disk; NATS comes back on the
// same port and data; the spool drains; every sample taken before, during and
// after the outage is in the stream exactly once, counted by its key (GPU,
// time).
func TestSpoolThroughLongOutage(t *testing.T) {
	dir, port := t.TempDir(), bustest.FreePort(t)
	srv := bustest.StartOn(t, dir, port)
	nc, err := bus.Connect(bus.ClientConfig{URL: srv.URL}, "collector", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	cfg := collector.DefaultConfig()
	cfg.Cluster, cfg.Node = "c1", "n1"
	cfg.Interval, cfg.JobEndAfter = time.Hour, time.Hour // Run only drains the spool; the test calls Collect
	cfg.PublishTimeout = 200 * time.Millisecond
	cfg.MaxBackoff = 50 * time.Millisecond
	spoolDir := filepath.Join(t.TempDir(), "spool")
	cfg.Spool = spool.Config{Dir: spoolDir, MaxBytes: 64 << 20}
	c, err := collector.New(cfg, clockedSource{}, js)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()

	clock := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	tick := func(n int) {
		t.Helper()
		for range n {
			if err := c.Collect(t.Context(), clock); err != nil {
				t.Fatal(err)
			}
			clock = clock.Add(time.Second)
		}
	}
	const before, outage, after = 20, 600, 20
	tick(before)
	if st := c.Stats(); st.Spooled != 0 {
		t.Fatalf("spooled with NATS up: %+v", st)
	}
	srv.Stop()
	tick(outage)
	st := c.Stats()
	if st.SpoolPending < outage-1 || st.SpoolDropped != 0 {
		t.Fatalf("after %d ticks with NATS down: %+v, want them spooled", outage, st)
	}
	if files, _ := os.ReadDir(spoolDir); len(files) == 0 {
		t.Fatalf("nothing on disk in %s", spoolDir)
	}
	srv = bustest.StartOn(t, dir, port)
	deadline := time.Now().Add(60 * time.Second)
	for c.Stats().SpoolPending > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the spool did not drain: %+v", c.Stats())
		}
		time.Sleep(20 * time.Millisecond)
	}
	tick(after)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	const total = before + outage + after
	seen := map[string]int{}
	batches := 0
	srv.EachSampleBatch(t, func(b *schemas.SampleBatch) {
		batches++
		for _, g := range b.GPUs {
			seen[fmt.Sprintf("%s@%d", g.GPUUUID, g.TimeMs)]++
		}
	})
	if batches != total {
		t.Errorf("the stream holds %d batches, the collector took %d", batches, total)
	}
	if len(seen) != 2*total {
		t.Errorf("%d distinct samples in the stream, want %d", len(seen), 2*total)
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("sample %s is in the stream %d times", k, n)
		}
	}
	final := c.Stats()
	t.Logf("%d ticks (%s of the collector's clock with NATS down): %d spooled, %d batches in the stream, %d samples once each",
		total, time.Duration(outage)*time.Second, final.Spooled, batches, len(seen))
}
