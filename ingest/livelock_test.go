package ingest_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/collector"
	"github.com/gpupool/gpupool/ingest"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
)

// staleCount is what a staleHandler saw: how many batches ingest left to
// redelivery for being held too long, and the most deliveries a message of one
// of them had had.
type staleCount struct {
	mu            sync.Mutex
	left          int
	maxDeliveries uint64
}

func (c *staleCount) get() (left int, maxDeliveries uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.left, c.maxDeliveries
}

// staleHandler passes records on to h and counts ingest's "batch held too long"
// records into c.
type staleHandler struct {
	h slog.Handler
	c *staleCount
}

func (s staleHandler) Enabled(ctx context.Context, l slog.Level) bool { return s.h.Enabled(ctx, l) }
func (s staleHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return staleHandler{s.h.WithAttrs(as), s.c}
}
func (s staleHandler) WithGroup(name string) slog.Handler {
	return staleHandler{s.h.WithGroup(name), s.c}
}
func (s staleHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "batch held too long, leaving it to redelivery" {
		s.c.mu.Lock()
		s.c.left++
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "deliveries" {
				s.c.maxDeliveries = max(s.c.maxDeliveries, a.Value.Uint64())
			}
			return true
		})
		s.c.mu.Unlock()
	}
	return s.h.Handle(ctx, r)
}

// publishUntil runs ticks of nodes collectors, one tick every pace, until stop
// is closed; it returns the rows they published.
func publishUntil(t *testing.T, e *env, nodes int, start time.Time, pace time.Duration, stop <-chan struct{}, ticks *atomic.Int64) (gpuRows, procRows uint64) {
	t.Helper()
	var cs []*collector.Collector
	for i := range nodes {
		cfg := collector.DefaultConfig()
		cfg.Cluster, cfg.Node = "c1", fmt.Sprintf("node-%d", i)
		c, err := collector.New(cfg, fakeSource{gpus: 4, procs: 2}, e.bus.JS)
		if err != nil {
			t.Error(err)
			return 0, 0
		}
		cs = append(cs, c)
	}
	tick := time.NewTicker(pace)
	defer tick.Stop()
	for k := 0; ; k++ {
		for _, c := range cs {
			if err := c.Collect(context.Background(), start.Add(time.Duration(k)*time.Second)); err != nil {
				t.Error(err)
				return 0, 0
			}
		}
		ticks.Add(1)
		select {
		case <-stop:
			for _, c := range cs {
				gpuRows += c.Stats().GPURows
				procRows += c.Stats().ProcessRows
			}
			return gpuRows, procRows
		case <-tick.C:
		}
	}
}

// TestSlowStoreUnderContinuousPublishing reproduces the livelock of issue 38:
// every insert takes longer than the hold limit (ack_wait / 2) while collectors
// keep publishing, so every batch gathered meanwhile waits its turn past the
// limit. Ingest used to leave such a batch to redelivery, and the same
// messages came back, waited, and were left again (eleven times in a row in
// the log). Progress is asserted by counts, not by time: the first tick's rows
// must be stored while publishing goes on, no batch may be left to redelivery
// for waiting behind our own insert (kept alive), and none holding a message
// delivered staleRedeliveries (3) times (then it is inserted).
func TestSlowStoreUnderContinuousPublishing(t *testing.T) {
	e := newEnv(t)
	cfg := testConfig()
	sink := &slowSink{inner: e.store, delay: cfg.AckWait * 3 / 4}
	seen := &staleCount{}
	log := slog.New(staleHandler{slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}), seen})
	reg := prometheus.NewRegistry()
	startIngestTo(t, e, sink, cfg, ingest.WithLogger(log), ingest.WithMetrics(ingest.NewMetrics(reg)))

	const nodes = 2
	start := time.Now().Add(-time.Hour).Truncate(time.Second)
	stop := make(chan struct{})
	var ticks atomic.Int64
	var g, p uint64
	published := make(chan struct{})
	go func() {
		defer close(published)
		g, p = publishUntil(t, e, nodes, start, cfg.BatchAge/2, stop, &ticks)
	}()
	// The first ticks must be stored while publishing goes on. A livelock shows
	// as a batch left to redelivery again and again: fail on the first batch
	// left holding a message delivered three times, or after 5,000 ticks.
	firstTicks := fmt.Sprintf("SELECT count() AS n FROM gpu_samples WHERE toUnixTimestamp64Milli(ts) < %d", start.Add(3*time.Second).UnixMilli())
	poll := time.NewTicker(20 * time.Millisecond)
	for {
		if count(t, e.store, firstTicks) == 3*nodes*4 {
			break
		}
		left, deliveries := seen.get()
		if deliveries >= 3 {
			close(stop)
			t.Fatalf("livelock: a batch holding a message delivered %d times was left to redelivery (%d batches left so far, %d ticks published)", deliveries, left, ticks.Load())
		}
		if n := ticks.Load(); n > 5000 {
			close(stop)
			t.Fatalf("the first 3 ticks are not stored after %d ticks were published (%d batches left to redelivery)", n, left)
		}
		<-poll.C
	}
	poll.Stop()
	// Some more batches under the slow store, then stop and catch up.
	for n := ticks.Load(); ticks.Load() < n+20; {
		time.Sleep(cfg.BatchAge)
	}
	close(stop)
	<-published
	waitCaughtUp(t, e.bus.JS, cfg.Durable)
	assertExact(t, e.store, g, p, 0)
	if left, deliveries := seen.get(); left > 0 {
		t.Errorf("%d batches were left to redelivery (a message delivered up to %d times) for waiting their turn behind a slow insert", left, deliveries)
	}
	if n := gauge(t, reg, "gpupool_ingest_stale_batches_total", "samples"); n > 0 {
		t.Errorf("stale batches counted: %v", n)
	}
	t.Logf("%d ticks of %d nodes published; %d inserts, each %v", ticks.Load(), nodes, sink.inserts.Load(), sink.delay)
}

// slowQuerier answers ingest's job-identity lookups after delay.
type slowQuerier struct {
	ingest.Querier
	delay   time.Duration
	queries atomic.Int64
}

func (q *slowQuerier) Query(ctx context.Context, sql string, params store.Params) (*store.Result, error) {
	q.queries.Add(1)
	select {
	case <-time.After(q.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return q.Querier.Query(ctx, sql, params)
}

// TestSlowGatheringUnderContinuousPublishing reproduces the livelock as it was
// logged: the same messages left to redelivery again and again because every
// attempt at their batch took longer than the hold limit, here because each
// message of a job ingest has not seen needs a store read slower than
// ack_wait / 4, and new jobs keep arriving behind the redelivered messages. A
// batch is kept alive right before it is flushed, and one holding a message
// delivered three times is inserted however long it was held: the first jobs'
// events are stored while publishing goes on.
func TestSlowGatheringUnderContinuousPublishing(t *testing.T) {
	e := newEnv(t)
	cfg := testConfig()
	cfg.FetchMax, cfg.MaxAckPending = 4, 100
	q := &slowQuerier{Querier: e.store, delay: cfg.AckWait * 3 / 10}
	seen := &staleCount{}
	log := slog.New(staleHandler{slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}), seen})
	_, ing := startIngest(t, e, cfg, ingest.WithLogger(log), ingest.WithJobLookup(q))

	start := time.Now().Add(-time.Hour).Truncate(time.Second)
	stop := make(chan struct{})
	var sent atomic.Int64
	published := make(chan struct{})
	go func() {
		defer close(published)
		tick := time.NewTicker(q.delay / 2)
		defer tick.Stop()
		for i := 0; ; i++ {
			ev := schemas.JobEvent{TimeMs: start.UnixMilli() + int64(i), Job: fmt.Sprintf("job-%d", i), Event: schemas.EventSubmit, Cluster: "c1", Team: "nlp", GPUs: 1}
			data, err := schemas.EncodeJobEvents(nil, &schemas.JobEventBatch{Producer: "t", Seq: uint64(i), Events: []schemas.JobEvent{ev}})
			if err != nil {
				t.Error(err)
				return
			}
			if _, err := e.bus.JS.Publish(context.Background(), bus.JobsSubject("c1"), data); err != nil {
				t.Error(err)
				return
			}
			sent.Add(1)
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	first := "SELECT count() AS n FROM job_events WHERE job IN ('job-0', 'job-1', 'job-2')"
	poll := time.NewTicker(20 * time.Millisecond)
	defer poll.Stop()
	for count(t, e.store, first) < 3 {
		left, deliveries := seen.get()
		if deliveries >= 3 {
			close(stop)
			t.Fatalf("livelock: a batch holding a message delivered %d times was left to redelivery (%d batches left so far, %d messages published)", deliveries, left, sent.Load())
		}
		if n := sent.Load(); n > 2000 {
			close(stop)
			t.Fatalf("the first jobs' events are not stored after %d messages were published (%d batches left to redelivery)", n, left)
		}
		<-poll.C
	}
	close(stop)
	<-published
	waitCaughtUp(t, e.bus.JS, cfg.Durable)
	if got, want := count(t, e.store, "SELECT count() AS n FROM job_events"), uint64(sent.Load()); got != want {
		t.Errorf("job_events holds %d rows, %d were published (%+v): a message delivered again while its batch was in flight was taken for a repeat of itself", got, want, ing.Stats())
	}
	left, deliveries := seen.get()
	if deliveries >= 3 {
		t.Errorf("a batch holding a message delivered %d times was left to redelivery (%d batches left): progress is not guaranteed", deliveries, left)
	}
	t.Logf("%d messages published, %d lookups of %v; %d batches left to redelivery (at most %d deliveries)", sent.Load(), q.queries.Load(), q.delay, left, deliveries)
}
