package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/bus/bustest"
	"github.com/gpupool/gpupool/ingest"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

// flakySink fails every insert while down is set, like a ClickHouse that cannot be
// reached.
type flakySink struct {
	inner   ingest.Sink
	down    atomic.Bool
	refused atomic.Int64
}

func (f *flakySink) Insert(ctx context.Context, table string, b *store.Block, token string) error {
	if f.down.Load() {
		f.refused.Add(1)
		return errors.New("dial tcp 127.0.0.1:9000: connect: connection refused")
	}
	return f.inner.Insert(ctx, table, b, token)
}

func TestStoreOutageHoldsBacklogAndCatchesUp(t *testing.T) {
	e := newEnv(t)
	sink := &flakySink{inner: e.store}
	sink.down.Store(true)
	cfg := testConfig()
	cfg.RetryMax = 50 * time.Millisecond
	startIngestTo(t, e, sink, cfg)

	start := time.Now().Add(-time.Hour).Truncate(time.Second)
	g, p := publish(t, e.bus.JS, 4, 200, start)
	// While the store is down: ingest keeps retrying its batch, gathers at most one
	// more, and pulls no further; the rest stays in JetStream.
	waitUntil(t, "five refused inserts", 10*time.Second, func() error {
		if n := sink.refused.Load(); n < 5 {
			return fmt.Errorf("%d refused", n)
		}
		return nil
	})
	cons, err := e.bus.JS.Consumer(t.Context(), bus.StreamSamples, cfg.Durable+"-samples")
	if err != nil {
		t.Fatal(err)
	}
	info, err := cons.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// Two batches (one being inserted, one gathered): batch_rows rows each (12 per
	// message here) plus one fetch.
	if bound := 2 * (cfg.BatchRows/12 + cfg.FetchMax); info.NumAckPending > bound {
		t.Errorf("%d messages held by ingest while the store is down; want at most two batches (%d)", info.NumAckPending, bound)
	}
	if info.NumPending == 0 {
		t.Error("nothing left in JetStream: ingest kept pulling while the store was down")
	}
	if n := count(t, e.store, "SELECT count() AS n FROM gpu_samples"); n != 0 {
		t.Fatalf("%d rows stored while the store was down", n)
	}
	sink.down.Store(false)
	waitCaughtUp(t, e.bus.JS, cfg.Durable)
	assertExact(t, e.store, g, p, 0)
}

// TestNATSRestartWhileConsuming restarts the NATS server under a publishing
// collector and a consuming ingest, both on TCP connections that reconnect.
func TestNATSRestartWhileConsuming(t *testing.T) {
	dir, port := t.TempDir(), bustest.FreePort(t)
	srv := bustest.StartOn(t, dir, port)
	s := chdbtest.Open(t)
	if _, err := store.Migrate(t.Context(), s, schemas.MigrationParams{RawTTLDays: 3650}); err != nil {
		t.Fatal(err)
	}
	var conns []*nats.Conn
	connect := func(name string) jetstream.JetStream {
		nc, err := bus.Connect(bus.ClientConfig{URL: srv.URL}, name, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		conns = append(conns, nc)
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		return js
	}
	// waitConns waits until both clients are connected (up) or have seen the
	// server go (down).
	waitConns := func(up bool) {
		t.Helper()
		for _, nc := range conns {
			waitUntil(t, nc.Opts.Name+" connected: "+strconv.FormatBool(up), 30*time.Second, func() error {
				if nc.IsConnected() != up {
					return fmt.Errorf("status %v", nc.Status())
				}
				return nil
			})
		}
	}
	pubJS, ingJS := connect("publisher"), connect("ingest")
	cfg := testConfig()
	ing, err := ingest.New(cfg, ingJS, s)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ing.Run(ctx) }()
	defer func() { cancel(); <-done }()

	start := time.Now().Add(-time.Hour).Truncate(time.Second)
	var gpuRows, procRows uint64
	for round := 0; round < 3; round++ {
		g, p := publish(t, pubJS, 2, 20, start.Add(time.Duration(round)*time.Minute))
		gpuRows, procRows = gpuRows+g, procRows+p
		srv.Stop()
		waitConns(false)
		srv = bustest.StartOn(t, dir, port)
		waitConns(true)
	}
	g, p := publish(t, pubJS, 2, 20, start.Add(10*time.Minute))
	gpuRows, procRows = gpuRows+g, procRows+p
	waitCaughtUp(t, srv.JS, cfg.Durable)
	assertExact(t, s, gpuRows, procRows, 0)
}

// TestIngestKilledRepeatedly runs ingest in a child process and kills it with
// SIGKILL at a random point while it works through a backlog (after a random number
// of deliveries to it, so that the kill lands mid-work); the child restarts on the
// same data each time. Stored rows must equal published rows.
func TestIngestKilledRepeatedly(t *testing.T) {
	if os.Getenv("GPUPOOL_INGEST_CHILD") != "" {
		runIngestChild(t)
		return
	}
	if testing.Short() {
		t.Skip("-short: skipping the subprocess kill test")
	}
	dir, port := t.TempDir(), bustest.FreePort(t)
	b := bustest.StartOn(t, dir, port)
	start := time.Now().Add(-time.Hour).Truncate(time.Second)
	const nodes, ticks = 4, 150 // one message per node and tick
	g, p := publish(t, b.JS, nodes, ticks, start)
	dataDir := filepath.Join(t.TempDir(), "chdb")
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("GPUPOOL_KILL_SEED"); v != "" { // to replay a failed run's kill points
		if _, err := fmt.Sscan(v, &seed); err != nil {
			t.Fatalf("GPUPOOL_KILL_SEED %q: %v", v, err)
		}
	}
	t.Logf("kill points seeded with %d (GPUPOOL_KILL_SEED replays them)", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	durable := testConfig().Durable
	samples := func() (*jetstream.ConsumerInfo, error) {
		c, err := b.JS.Consumer(t.Context(), bus.StreamSamples, durable+"-samples")
		if err != nil {
			return nil, err
		}
		return c.Info(t.Context())
	}
	const kills = 5
	for i := 0; i <= kills; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestIngestKilledRepeatedly$")
		ready := filepath.Join(t.TempDir(), "ready")
		cmd.Env = append(os.Environ(), "GPUPOOL_INGEST_CHILD=1", "GPUPOOL_CHILD_NATS="+b.URL, "GPUPOOL_CHILD_DATA="+dataDir, "GPUPOOL_CHILD_READY="+ready)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if i < kills {
			// The child is killed once JetStream has delivered it a random share
			// of what is left (up to half), or when nothing is left to do.
			delivered, left := uint64(0), uint64(nodes*ticks)
			if ci, err := samples(); err == nil {
				delivered, left = ci.Delivered.Consumer, ci.NumPending+uint64(ci.NumAckPending)
			}
			at := delivered + 1 + rng.Uint64N(left/2+1)
			waitUntil(t, fmt.Sprintf("delivery %d to ingest child %d", at, i), 30*time.Second, func() error {
				ci, err := samples()
				if err != nil {
					return err
				}
				if ci.Delivered.Consumer < at && ci.NumPending+uint64(ci.NumAckPending) > 0 {
					return fmt.Errorf("%d delivered", ci.Delivered.Consumer)
				}
				return nil
			})
			t.Logf("killing ingest child %d at delivery %d", i, at)
			_ = cmd.Process.Signal(syscall.SIGKILL)
			_ = cmd.Wait()
			continue
		}
		// The last child runs until everything is acknowledged, then is stopped.
		waitCaughtUp(t, b.JS, durable)
		waitUntil(t, "the last ingest child to be ready", 30*time.Second, func() error {
			_, err := os.Stat(ready)
			return err
		})
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("last ingest child: %v", err)
		}
	}
	cfg := chdbtest.Config(t)
	cfg.Path, cfg.Database = dataDir, "gpupool"
	s, err := chdb.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	assertExact(t, s, g, p, 0)
}

// runIngestChild is the child side of TestIngestKilledRepeatedly.
func runIngestChild(t *testing.T) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	// Not chdbtest.Config: it makes the binary's shared data path, which this
	// child, killed rather than ending, would leave behind.
	cfg := chdb.DefaultConfig()
	cfg.Path, cfg.LibPath, cfg.Database = os.Getenv("GPUPOOL_CHILD_DATA"), chdbtest.LibPath(), "gpupool"
	s, err := chdb.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Migrate(context.Background(), s, schemas.MigrationParams{RawTTLDays: 3650}); err != nil {
		t.Fatal(err)
	}
	nc, err := bus.Connect(bus.ClientConfig{URL: os.Getenv("GPUPOOL_CHILD_NATS")}, "ingest-child", nil)
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	icfg := testConfig()
	icfg.FetchMax = 20 // several batches per second, so kills land mid-batch
	ing, err := ingest.New(icfg, js, s)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(os.Getenv("GPUPOOL_CHILD_READY"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := ing.Run(ctx); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
}

// TestHugeAndHostileMessages sends a batch near the maximum message size, fuzzed
// bytes and a wrong version between good batches.
func TestHugeAndHostileMessages(t *testing.T) {
	e := newEnv(t)
	stop, ing := startIngest(t, e, testConfig())
	start := time.Now().Add(-time.Hour).Truncate(time.Second)
	g, p := publish(t, e.bus.JS, 1, 5, start)

	huge := &schemas.SampleBatch{Cluster: "c1", Node: "huge"}
	for i := 0; i < 120_000; i++ {
		huge.Processes = append(huge.Processes, schemas.ProcessSample{
			TimeMs: start.UnixMilli(), GPUUUID: "GPU-h", PID: uint32(i + 2), Job: "j-" + strconv.Itoa(i%100), FBUsedMiB: 1, SMUtil: 0.5, MemUtil: 0.5,
		})
	}
	data, err := schemas.NewEncoder().Encode(nil, huge)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.bus.JS.Publish(t.Context(), bus.SamplesSubject("c1", "huge"), data); err != nil {
		t.Fatalf("publish a %d-byte batch: %v", len(data), err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	hostile := 0
	for i := 0; i < 30; i++ {
		junk := make([]byte, rng.IntN(2000))
		for j := range junk {
			junk[j] = byte(rng.UintN(256))
		}
		if i%3 == 0 && len(data) > 100 {
			// Valid protobuf prefix, then garbage.
			junk = append(append([]byte(nil), data[:100]...), junk...)
		}
		var b schemas.SampleBatch
		if schemas.NewDecoder().Decode(junk, &b) == nil && schemas.Validate(&b, time.Now().UnixMilli(), time.Hour.Milliseconds()) == nil {
			continue // random bytes that happen to form a valid batch are not hostile
		}
		hostile++
		if _, err := e.bus.JS.Publish(t.Context(), bus.SamplesSubject("c1", fmt.Sprintf("junk-%d", i)), junk); err != nil {
			t.Fatal(err)
		}
	}
	g2, p2 := publish(t, e.bus.JS, 1, 5, start.Add(time.Minute))
	waitCaughtUp(t, e.bus.JS, testConfig().Durable)
	_ = stop()
	assertExact(t, e.store, g+g2, p+p2+uint64(len(huge.Processes)), 0)
	if got := ing.Stats().DeadLetters; got != uint64(hostile) {
		t.Fatalf("dead letters %d, want %d", got, hostile)
	}
}

// TestTwoIngestersShareTheConsumer runs two ingest processes on one durable
// consumer with an ack wait short enough that messages are redelivered from one to
// the other: counts must still be exact.
func TestTwoIngestersShareTheConsumer(t *testing.T) {
	e := newEnv(t)
	cfg := testConfig()
	stop1, ing1 := startIngest(t, e, cfg)
	stop2, ing2 := startIngest(t, e, cfg)
	start := time.Now().Add(-time.Hour).Truncate(time.Second)
	g, p := publish(t, e.bus.JS, 6, 60, start)
	publishJobs(t, e.bus.JS, 20, start)
	waitCaughtUp(t, e.bus.JS, cfg.Durable)
	_ = stop1()
	_ = stop2()
	assertExact(t, e.store, g, p, 40)
	s1, s2 := ing1.Stats(), ing2.Stats()
	if s1.RowsInserted == 0 || s2.RowsInserted == 0 {
		t.Logf("one ingester did all the work: %+v %+v", s1, s2)
	}
}

// TestStalledBatchIsNotInsertedTwice: one ingester forms a batch and stalls before
// recording its intent (as a write held through a leader election does) for longer
// than ack_wait. Its messages are redelivered to a second ingester, which stores
// them in batches of its own; when the first wakes, its batch is older in time but
// younger in the intent bucket, and must not be inserted.
func TestStalledBatchIsNotInsertedTwice(t *testing.T) {
	e := newEnv(t)
	cfg := testConfig()
	start := time.Now().Add(-time.Hour).Truncate(time.Second)
	g, p := publish(t, e.bus.JS, 4, 10, start)
	stalled, woke := make(chan struct{}), make(chan struct{})
	var once sync.Once
	stop1, ing1 := startIngest(t, e, cfg, ingest.WithFault(func(kind, point string) error {
		if kind == "samples" && point == ingest.FaultBeforeIntent {
			once.Do(func() {
				close(stalled)
				time.Sleep(3 * cfg.AckWait)
				close(woke)
			})
		}
		return nil
	}))
	select {
	case <-stalled:
	case <-time.After(30 * time.Second):
		t.Fatal("the first ingester formed no batch")
	}
	// Smaller batches (one fetch of 7 messages each), so that none is the stalled batch
	// again (the same batch would share its intent, and its tokens).
	cfg2 := cfg
	cfg2.BatchRows, cfg2.FetchMax = 30, 7
	stop2, ing2 := startIngest(t, e, cfg2)
	g2, p2 := publish(t, e.bus.JS, 4, 10, start.Add(time.Minute))
	<-woke
	waitUntil(t, "the stalled batch settled", 30*time.Second, func() error {
		if st := ing1.Stats(); st.RowsInserted+st.Beaten+st.DedupHits == 0 {
			return fmt.Errorf("first ingester %+v", st)
		}
		return nil
	})
	waitCaughtUp(t, e.bus.JS, cfg.Durable)
	_ = stop1()
	_ = stop2()
	assertExact(t, e.store, g+g2, p+p2, 0)
	if ing1.Stats().Beaten == 0 {
		t.Errorf("the stalled batch was not beaten: %+v", ing1.Stats())
	}
	if ing2.Stats().RowsInserted == 0 {
		t.Errorf("the second ingester stored nothing (%+v): the stall did not redeliver", ing2.Stats())
	}
	t.Logf("first %+v, second %+v", ing1.Stats(), ing2.Stats())
}
