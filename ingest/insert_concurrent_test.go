package ingest_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/gpupool/gpupool/ingest"
	"github.com/gpupool/gpupool/store"
)

// overlapSink passes inserts to the store, holding each for up to wait until an
// insert into another table is under way too, and records the most tables it saw
// inserting at once.
type overlapSink struct {
	inner ingest.Sink
	wait  time.Duration

	mu       sync.Mutex
	inFlight map[string]int
	changed  chan struct{} // closed and replaced whenever inFlight changes
	most     int
}

func newOverlapSink(inner ingest.Sink, wait time.Duration) *overlapSink {
	return &overlapSink{inner: inner, wait: wait, inFlight: map[string]int{}, changed: make(chan struct{})}
}

func (s *overlapSink) Insert(ctx context.Context, table string, b *store.Block, token string) error {
	s.mu.Lock()
	s.inFlight[table]++
	s.most = max(s.most, len(s.inFlight))
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.inFlight[table]--; s.inFlight[table] == 0 {
			delete(s.inFlight, table)
		}
		close(s.changed)
		s.changed = make(chan struct{})
		s.mu.Unlock()
	}()
	deadline := time.After(s.wait)
wait:
	for {
		s.mu.Lock()
		others, changed := len(s.inFlight) > 1, s.changed
		s.mu.Unlock()
		if others {
			break
		}
		select {
		case <-changed:
		case <-deadline:
			break wait
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return s.inner.Insert(ctx, table, b, token)
}

func (s *overlapSink) mostAtOnce() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.most
}

// A batch's tables are inserted at once, each on its own connection, and
// exactly once: the engine writes one insert on one thread, so gpu_samples and
// process_samples one after the other left a core idle.
func TestTablesInsertAtOnce(t *testing.T) {
	e := newEnv(t)
	sink := newOverlapSink(e.store, 2*time.Second)
	cfg := testConfig()
	cfg.AckWait = time.Minute // no redelivery while an insert waits for its partner
	cfg.IntentTTL = max(cfg.IntentTTL, cfg.AckWait)
	stop, _ := startIngestTo(t, e, sink, cfg)
	start := time.Now().Add(-time.Hour).Truncate(time.Second)
	g, p := publish(t, e.bus.JS, 2, 20, start)
	waitCaughtUp(t, e.bus.JS, cfg.Durable)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	assertExact(t, e.store, g, p, 0)
	if n := sink.mostAtOnce(); n < 2 {
		t.Errorf("at most %d table(s) were inserting at once, want gpu_samples and process_samples together", n)
	}
}
