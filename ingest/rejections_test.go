package ingest_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/collector"
)

// lockedBuffer is a log destination safe for the handlers' goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestCollectorHearsItsDeadLetters: a collector publishes batches timestamped a
// day ahead (and one good batch); ingest dead-letters the bad ones and tells the
// node; the collector counts them in gpupool_collector_dead_lettered_total by
// reason and logs one warning (rate-limited) naming the reason. It used to say
// nothing while most of its samples were dropped. Another node's collector hears
// nothing.
func TestCollectorHearsItsDeadLetters(t *testing.T) {
	e := newEnv(t)
	cfg := collector.DefaultConfig()
	cfg.Cluster, cfg.Node = "c1", "n1"
	c, err := collector.New(cfg, twoGPUs{}, e.bus.JS)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var logs lockedBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	reg := prometheus.NewRegistry()
	m := collector.NewMetrics(reg)
	rej, err := collector.WatchRejections(e.bus.Conn, bus.RejectedSubject("c1", "n1"), m, log)
	if err != nil {
		t.Fatal(err)
	}
	defer rej.Stop()
	other, err := collector.WatchRejections(e.bus.Conn, bus.RejectedSubject("c1", "n2"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Stop()

	stop, _ := startIngest(t, e, testConfig())
	now := time.Now()
	const bad = 5
	for i := range bad {
		if err := c.Collect(t.Context(), now.Add(24*time.Hour+time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Collect(t.Context(), now); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the collector to hear of its dead letters", 30*time.Second, func() error {
		if st := rej.Stats(); st.Batches != bad {
			return fmt.Errorf("heard of %d dead-lettered batches, want %d", st.Batches, bad)
		}
		return nil
	})
	waitCaughtUp(t, e.bus.JS, testConfig().Durable)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if st := rej.Stats(); st.Rows != bad*4 {
		t.Errorf("rows dead-lettered: %d, want %d (2 GPUs and 2 processes a batch)", st.Rows, bad*4)
	}
	if got := testutil.ToFloat64(m.DeadLettered("invalid_value")); got != bad {
		t.Errorf("gpupool_collector_dead_lettered_total{reason=\"invalid_value\"} = %g, want %d", got, bad)
	}
	if n, err := testutil.GatherAndCount(reg, "gpupool_collector_dead_lettered_total"); err != nil || n != 1 {
		t.Errorf("dead_lettered series: %d (%v), want 1", n, err)
	}
	warnings := strings.Count(logs.String(), "ingest dead-lettered this node's samples")
	if warnings != 1 || !strings.Contains(logs.String(), "reason=invalid_value") || !strings.Contains(logs.String(), "timestamp too far in the future") {
		t.Errorf("want one warning naming the reason, got %d:\n%s", warnings, logs.String())
	}
	if st := other.Stats(); st.Batches != 0 {
		t.Errorf("another node's collector heard of %d batches", st.Batches)
	}
	assertExact(t, e.store, 2, 2, 0)
}
