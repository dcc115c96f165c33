package ingest_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/bus/bustest"
	"github.com/gpupool/gpupool/ingest"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

// oneNode is a batch of gpus GPUs with one process each, at ms.
func oneNode(node string, gpus int, ms int64) *schemas.SampleBatch {
	b := &schemas.SampleBatch{Cluster: "c1", Node: node}
	for g := range gpus {
		s := schemas.NewGPUSample()
		s.TimeMs, s.GPUUUID, s.GPUIndex = ms, fmt.Sprintf("GPU-%s-%d", node, g), uint32(g)
		s.Model, s.Card, s.FBTotalMiB, s.FBUsedMiB, s.SMActive = "NVIDIA H100 80GB HBM3", "H100-80GB", 81559, 1000, 0.5
		b.GPUs = append(b.GPUs, s)
		b.Processes = append(b.Processes, schemas.ProcessSample{TimeMs: ms, GPUUUID: s.GPUUUID, PID: uint32(100 + g),
			ProcessName: "python3", Job: "job-" + node, FBUsedMiB: 1000, SMUtil: 0.5, MemUtil: schemas.Missing})
	}
	return b
}

func publishBatch(t *testing.T, e *env, b *schemas.SampleBatch, msgID string) {
	t.Helper()
	data, err := schemas.NewEncoder().Encode(nil, b)
	if err != nil {
		t.Fatal(err)
	}
	m := &nats.Msg{Subject: bus.SamplesSubject(b.Cluster, b.Node), Data: data, Header: nats.Header{}}
	m.Header.Set(nats.MsgIdHdr, msgID)
	if _, err := e.bus.JS.PublishMsg(t.Context(), m); err != nil {
		t.Fatal(err)
	}
}

// gauge reads one metric of reg with label kind.
func gauge(t *testing.T, reg *prometheus.Registry, name, kind string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetValue() == kind {
					if g := m.GetGauge(); g != nil {
						return g.GetValue()
					}
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestRetentionEdge: samples older than the raw retention are dead-lettered
// (past_retention), never counted as inserted; after the TTL ran, the raw tables
// hold every row counted and the rollups agree with them.
func TestRetentionEdge(t *testing.T) {
	b := bustest.Start(t)
	s := chdbtest.Open(t)
	if _, err := store.Migrate(t.Context(), s, schemas.MigrationParams{RawTTLDays: 1}); err != nil {
		t.Fatal(err)
	}
	e := &env{bus: b, store: s}
	reg := prometheus.NewRegistry()
	stop, ing := startIngest(t, e, testConfig(), ingest.WithRawRetention(24*time.Hour), ingest.WithMetrics(ingest.NewMetrics(reg)))
	now := time.Now()
	kept := []*schemas.SampleBatch{
		oneNode("n-recent", 2, now.Add(-time.Minute).UnixMilli()),
		oneNode("n-edge", 2, now.Add(-24*time.Hour+ingest.RetentionMargin+5*time.Minute).UnixMilli()),
	}
	old := []*schemas.SampleBatch{
		oneNode("n-old", 2, now.Add(-24*time.Hour+ingest.RetentionMargin-5*time.Minute).UnixMilli()),
		oneNode("n-older", 2, now.Add(-30*time.Hour).UnixMilli()),
		oneNode("n-ancient", 2, now.Add(-400*24*time.Hour).UnixMilli()),
	}
	for i, bt := range append(append([]*schemas.SampleBatch(nil), kept...), old...) {
		publishBatch(t, e, bt, "edge-"+strconv.Itoa(i))
	}
	waitCaughtUp(t, e.bus.JS, testConfig().Durable)
	_ = stop()
	st := ing.Stats()
	if st.DeadLetters != uint64(len(old)) {
		t.Errorf("dead letters %d, want %d (the batches past retention)", st.DeadLetters, len(old))
	}
	if got := gauge(t, reg, "gpupool_ingest_dead_letters_total", "past_retention"); got != float64(len(old)) {
		t.Errorf("dead letters past_retention %v, want %d", got, len(old))
	}
	if want := uint64(len(kept) * 4); st.RowsInserted != want {
		t.Errorf("rows inserted %d, want %d", st.RowsInserted, want)
	}
	// Let the TTL run: whatever ingest counted must still be there.
	for _, tbl := range []string{"gpu_samples", "process_samples"} {
		if err := s.Exec(t.Context(), "OPTIMIZE TABLE "+tbl+" FINAL", nil); err != nil {
			t.Fatal(err)
		}
	}
	if raw := count(t, s, "SELECT (SELECT count() FROM gpu_samples) + (SELECT count() FROM process_samples) AS n"); raw != st.RowsInserted {
		t.Errorf("raw tables hold %d rows after the TTL ran, ingest counted %d inserted", raw, st.RowsInserted)
	}
	assertRollupMatchesView(t, s)
}

// TestDuplicateRowsStoredOnce: rows repeated within one message (GPU rows, a
// process row, a job event), and the same rows sent again under another message
// ID after their first copy was stored (another batch), are stored once and
// counted. A repeat of the batch in flight is handed back until that batch is
// settled (TestJudgeRepeats); a repeat is never dropped from a batch that a
// recovery would rebuild otherwise (dedup.go).
func TestDuplicateRowsStoredOnce(t *testing.T) {
	e := newEnv(t)
	stop, ing := startIngest(t, e, testConfig())
	ms := time.Now().Add(-time.Hour).UnixMilli()
	twice := oneNode("n-b", 2, ms)
	twice.GPUs = append(twice.GPUs, twice.GPUs...)
	twice.Processes = append(twice.Processes, twice.Processes[0])
	publishBatch(t, e, twice, "b-1")
	ev := schemas.JobEvent{TimeMs: ms, Job: "k8s/ns/p", Event: schemas.EventSubmit, Cluster: "c1", Team: "nlp", GPUs: 1}
	publishEvents := func(seq uint64, evs ...schemas.JobEvent) {
		t.Helper()
		data, err := schemas.EncodeJobEvents(nil, &schemas.JobEventBatch{Producer: "t", Seq: seq, Events: evs})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.bus.JS.Publish(t.Context(), bus.JobsSubject("c1"), data); err != nil {
			t.Fatal(err)
		}
	}
	publishEvents(1, ev, ev)
	a := oneNode("n-a", 3, ms)
	publishBatch(t, e, a, "a-1")
	waitCaughtUp(t, e.bus.JS, testConfig().Durable)
	// The first copies are committed: the same rows again, under other IDs.
	publishBatch(t, e, a, "a-2")
	publishBatch(t, e, twice, "b-2")
	publishEvents(2, ev)
	waitCaughtUp(t, e.bus.JS, testConfig().Durable)
	publishBatch(t, e, a, "a-3")
	waitCaughtUp(t, e.bus.JS, testConfig().Durable)
	_ = stop()
	assertExact(t, e.store, 3+2, 3+2, 1)
	// twice: 2 GPU rows and 1 process row, then all 7 of its rows again; the job
	// event once, then again; a: 6 rows, twice.
	if got, want := ing.Stats().DuplicateRows, uint64(3+7+1+1+2*6); got != want {
		t.Errorf("duplicate rows counted %d, want %d", got, want)
	}
	if st := ing.Stats(); st.DeadLetters != 0 {
		t.Errorf("%d dead letters: a repeat is acknowledged, not dead-lettered", st.DeadLetters)
	}
}

// TestBacklogMetricsDuringStoreOutage: with the store down, ingest's pending and
// lag gauges rise with the stream's backlog (they used to freeze).
func TestBacklogMetricsDuringStoreOutage(t *testing.T) {
	e := newEnv(t)
	sink := &flakySink{inner: e.store}
	sink.down.Store(true)
	cfg := testConfig()
	cfg.RetryMax = 50 * time.Millisecond
	reg := prometheus.NewRegistry()
	startIngestTo(t, e, sink, cfg, ingest.WithMetrics(ingest.NewMetrics(reg)))
	start := time.Now().Add(-time.Hour).Truncate(time.Second)
	publish(t, e.bus.JS, 4, 100, start)
	waitUntil(t, "refused inserts", 10*time.Second, func() error {
		if n := sink.refused.Load(); n < 3 {
			return fmt.Errorf("%d refused", n)
		}
		return nil
	})
	// The backlog is what is not stored yet: messages not delivered (pending) and
	// those delivered but not acknowledged (ack pending). How it splits between the
	// two depends on how much ingest has fetched, so the test reads their sum.
	backlog := func() float64 {
		return gauge(t, reg, "gpupool_ingest_consumer_pending_messages", "samples") +
			gauge(t, reg, "gpupool_ingest_consumer_ack_pending_messages", "samples")
	}
	var first float64
	waitUntil(t, "backlog reported", 10*time.Second, func() error {
		if first = backlog(); first == 0 {
			return fmt.Errorf("pending + ack pending is 0 while the store is down")
		}
		return nil
	})
	publish(t, e.bus.JS, 4, 100, start.Add(time.Hour))
	waitUntil(t, "backlog to rise", 10*time.Second, func() error {
		if got := backlog(); got <= first {
			return fmt.Errorf("pending + ack pending %v; was %v before 100 more ticks of 4 nodes", got, first)
		}
		return nil
	})
	lag := gauge(t, reg, "gpupool_ingest_consumer_lag_seconds", "samples")
	waitUntil(t, "lag to grow", 10*time.Second, func() error {
		if got := gauge(t, reg, "gpupool_ingest_consumer_lag_seconds", "samples"); got <= lag || got == 0 {
			return fmt.Errorf("lag %v, was %v", got, lag)
		}
		return nil
	})
	sink.down.Store(false)
	waitCaughtUp(t, e.bus.JS, cfg.Durable)
}

// slowSink takes longer than the hold limit (ack_wait / 2) over every insert.
type slowSink struct {
	inner   ingest.Sink
	delay   time.Duration
	inserts atomic.Int64
}

func (s *slowSink) Insert(ctx context.Context, table string, b *store.Block, token string) error {
	s.inserts.Add(1)
	select {
	case <-time.After(s.delay):
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.inner.Insert(ctx, table, b, token)
}

// TestEnergyStepAcrossBatches: a GPU's energy counter that jumps between two
// messages, still under 2^53, is dead-lettered as it is within one message; a
// rise within 5 kW and a fall (a counter reset) are kept.
func TestEnergyStepAcrossBatches(t *testing.T) {
	e := newEnv(t)
	reg := prometheus.NewRegistry()
	stop, ing := startIngest(t, e, testConfig(), ingest.WithMetrics(ingest.NewMetrics(reg)))
	at := time.Now().Add(-time.Hour).Truncate(time.Second)
	energy := func(i int, mj uint64) *schemas.SampleBatch {
		b := oneNode("n-e", 1, at.Add(time.Duration(i)*time.Second).UnixMilli())
		b.GPUs[0].EnergyMilliJ = mj
		return b
	}
	steps := []struct {
		mj   uint64
		kept bool
	}{
		{1_000_000, true},
		{1 << 50, false},              // 2^50 mJ one second later: a broken counter
		{1_000_000 + 9_000_000, true}, // 9 kJ in 2 s: within 5 kW × (2 s + 1 s) of the last kept
		{500, true},                   // a fall: the driver reloaded
		{500 + 30_000_000, false},     // 30 kJ in 1 s
		{500 + 5_000_000*3, true},     // 15 kJ in 2 s of the last kept
	}
	kept := 0
	for i, s := range steps {
		publishBatch(t, e, energy(i, s.mj), "energy-"+strconv.Itoa(i))
		// Each message in a batch of its own: the rule must hold across batches.
		waitCaughtUp(t, e.bus.JS, testConfig().Durable)
		if s.kept {
			kept++
		}
	}
	_ = stop()
	if got, want := ing.Stats().DeadLetters, uint64(len(steps)-kept); got != want {
		t.Errorf("dead letters %d, want %d (the impossible steps)", got, want)
	}
	if got := gauge(t, reg, "gpupool_ingest_dead_letters_total", "invalid_value"); got != float64(len(steps)-kept) {
		t.Errorf("dead letters invalid_value %v, want %d", got, len(steps)-kept)
	}
	if got := count(t, e.store, "SELECT count() AS n FROM gpu_samples WHERE node = 'n-e'"); got != uint64(kept) {
		t.Errorf("gpu_samples holds %d rows of the node, want %d", got, kept)
	}
}
