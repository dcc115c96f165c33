package ingest_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/bus/bustest"
	"github.com/gpupool/gpupool/collector"
	"github.com/gpupool/gpupool/collector/spool"
	"github.com/gpupool/gpupool/ingest"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

type twoGPUs struct{}

func (twoGPUs) Sample(_ context.Context, at time.Time, b *schemas.SampleBatch) error {
	for g := 0; g < 2; g++ {
		s := schemas.NewGPUSample()
		s.TimeMs, s.GPUUUID = at.UnixMilli(), fmt.Sprintf("GPU-%d", g)
		b.GPUs = append(b.GPUs, s)
		b.Processes = append(b.Processes, schemas.ProcessSample{TimeMs: at.UnixMilli(), GPUUUID: s.GPUUUID, PID: uint32(100 + g), Job: "j"})
	}
	return nil
}

// noGPUs samples nothing: a collector that only drains its spool.
type noGPUs struct{}

func (noGPUs) Sample(context.Context, time.Time, *schemas.SampleBatch) error { return nil }

// TestNATSOutageLosesNothing stops the real NATS server while a collector samples,
// starts it again, and checks every sample taken meanwhile reaches the store once.
func TestNATSOutageLosesNothing(t *testing.T) {
	dir, port := t.TempDir(), bustest.FreePort(t)
	srv := bustest.StartOn(t, dir, port)
	url := srv.URL

	nc, err := bus.Connect(bus.ClientConfig{URL: url}, "collector", nil)
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
	cfg.Interval = 20 * time.Millisecond
	cfg.PublishTimeout = 200 * time.Millisecond
	cfg.MaxBackoff = 100 * time.Millisecond
	cfg.Spool = spool.Config{Dir: filepath.Join(t.TempDir(), "spool"), MaxBytes: 16 << 20}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	c, err := collector.New(cfg, twoGPUs{}, js, collector.WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// run starts a collector; the function it returns stops it.
	run := func(c *collector.Collector) (stop func()) {
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		return func() {
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
	}
	stop := run(c)

	waitStats := func(what string, c *collector.Collector, cond func(collector.Stats) bool) {
		t.Helper()
		waitUntil(t, what, 30*time.Second, func() error {
			if st := c.Stats(); !cond(st) {
				return fmt.Errorf("stats %+v", st)
			}
			return nil
		})
	}
	waitStats("batches before the outage", c, func(st collector.Stats) bool { return st.Batches >= 10 })
	srv.Stop()
	waitStats("batches spooled during the outage", c, func(st collector.Stats) bool { return st.SpoolPending >= 20 })
	// The collector restarts while NATS is still down: its spool stays on disk.
	stop()
	_ = c.Close()
	st1 := c.Stats()

	c2, err := collector.New(cfg, twoGPUs{}, js, collector.WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if p := c2.Stats().SpoolPending; p != st1.SpoolPending {
		t.Fatalf("restarted collector finds %d spooled messages, %d were left", p, st1.SpoolPending)
	}
	stop2 := run(c2)
	waitStats("more batches while NATS is down", c2, func(st collector.Stats) bool { return st.Batches >= 10 })
	srv = bustest.StartOn(t, dir, port)
	waitStats("the spool to drain", c2, func(st collector.Stats) bool { return st.SpoolPending == 0 && st.Batches >= 20 })
	stop2()
	st2 := c2.Stats()
	if st1.SpoolDropped+st2.SpoolDropped != 0 {
		t.Fatalf("spool dropped messages: %+v %+v", st1, st2)
	}
	if st2.SpoolPending > 0 {
		// A publish cut short by the stop (or one over its timeout on a loaded
		// machine just before it) is spooled, for the next start to republish:
		// start once more, sampling nothing, until the spool is empty.
		_ = c2.Close()
		c3, err := collector.New(cfg, noGPUs{}, js, collector.WithLogger(log))
		if err != nil {
			t.Fatal(err)
		}
		defer c3.Close()
		stop3 := run(c3)
		waitStats("the spool left at the stop to drain", c3, func(st collector.Stats) bool { return st.SpoolPending == 0 })
		stop3()
		t.Logf("%d message(s) spooled at the stop, republished by the next start", st2.SpoolPending)
	}

	s := chdbtest.Open(t)
	if _, err := store.Migrate(t.Context(), s, schemas.MigrationParams{RawTTLDays: 3650}); err != nil {
		t.Fatal(err)
	}
	icfg := ingest.DefaultConfig()
	icfg.BatchAge = 50 * time.Millisecond
	ing, err := ingest.New(icfg, srv.JS, s)
	if err != nil {
		t.Fatal(err)
	}
	ictx, icancel := context.WithCancel(t.Context())
	idone := make(chan error, 1)
	go func() { idone <- ing.Run(ictx) }()
	want := st1.GPURows + st2.GPURows
	waitUntil(t, "every sample in the store", 30*time.Second, func() error {
		res, err := s.Query(context.Background(), "SELECT count() AS n FROM gpu_samples", nil)
		if err != nil {
			return err
		}
		if n, _ := res.Int(0, "n"); uint64(n) < want {
			return fmt.Errorf("%d of %d gpu rows stored", n, want)
		}
		return nil
	})
	icancel()
	<-idone
	res, err := s.Query(context.Background(), "SELECT count() AS n, uniqExact(gpu_uuid, ts) AS u FROM gpu_samples", nil)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := res.Int(0, "n")
	u, _ := res.Int(0, "u")
	if uint64(n) != want || n != u {
		t.Fatalf("store has %d gpu rows (%d distinct), collector took %d", n, u, want)
	}
	t.Logf("took %d+%d batches, %d+%d spooled during the outage, %d rows stored exactly once", st1.Batches, st2.Batches, st1.Spooled, st2.Spooled, n)
}
