package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/bus/bustest"
	"github.com/gpupool/gpupool/collector"
	"github.com/gpupool/gpupool/ingest"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/schemas/wirepb"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

func TestMain(m *testing.M) { chdbtest.Main(m) }

// fakeSource reports gpus GPUs with procs processes each, values derived from time.
type fakeSource struct {
	gpus, procs int
}

func (f fakeSource) Sample(_ context.Context, at time.Time, b *schemas.SampleBatch) error {
	ms := at.UnixMilli()
	for g := 0; g < f.gpus; g++ {
		s := schemas.NewGPUSample()
		s.TimeMs, s.GPUUUID, s.GPUIndex = ms, fmt.Sprintf("GPU-%04d", g), uint32(g)
		s.Model, s.Card, s.FBTotalMiB, s.FBUsedMiB = "NVIDIA H100 80GB HBM3", "H100-80GB", 81559, 40000
		s.SMActive, s.GrEngineActive = float32(g%10)/10, 0.5
		b.GPUs = append(b.GPUs, s)
		for p := 0; p < f.procs; p++ {
			b.Processes = append(b.Processes, schemas.ProcessSample{
				TimeMs: ms, GPUUUID: s.GPUUUID, PID: uint32(1000 + g*100 + p), ProcessName: "python3",
				Job: fmt.Sprintf("job-%d", g), FBUsedMiB: 1000, SMUtil: 0.1, MemUtil: schemas.Missing,
			})
		}
	}
	return nil
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

type env struct {
	bus   *bustest.Bus
	store *chdb.Store
}

func newEnv(t *testing.T) *env {
	t.Helper()
	b := bustest.Start(t)
	s := chdbtest.Open(t)
	if _, err := store.Migrate(t.Context(), s, schemas.MigrationParams{RawTTLDays: 3650}); err != nil {
		t.Fatal(err)
	}
	return &env{bus: b, store: s}
}

func testConfig() ingest.Config {
	cfg := ingest.DefaultConfig()
	cfg.BatchRows = 2000
	cfg.BatchAge = 100 * time.Millisecond
	cfg.AckWait = time.Second
	cfg.FetchMax = 50
	cfg.MaxAckPending = 1000
	return cfg
}

// publish runs n ticks of nodes collectors and returns the rows they published.
func publish(t *testing.T, js jetstream.JetStream, nodes, n int, start time.Time) (gpuRows, procRows uint64) {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i := 0; i < nodes; i++ {
		cfg := collector.DefaultConfig()
		cfg.Cluster, cfg.Node = "c1", fmt.Sprintf("node-%d", i)
		c, err := collector.New(cfg, fakeSource{gpus: 4, procs: 2}, js)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < n; k++ {
				if err := c.Collect(t.Context(), start.Add(time.Duration(k)*time.Second)); err != nil {
					t.Error(err)
					return
				}
			}
			st := c.Stats()
			mu.Lock()
			gpuRows += st.GPURows
			procRows += st.ProcessRows
			mu.Unlock()
		}()
	}
	wg.Wait()
	return gpuRows, procRows
}

func publishJobs(t *testing.T, js jetstream.JetStream, n int, start time.Time) {
	t.Helper()
	for i := 0; i < n; i++ {
		data, err := schemas.EncodeJobEvents(nil, &schemas.JobEventBatch{Producer: "test", Seq: uint64(i), Events: []schemas.JobEvent{
			{TimeMs: start.UnixMilli(), Job: fmt.Sprintf("job-%d", i), Event: schemas.EventSubmit, Cluster: "c1", Team: "nlp", GPUs: 1},
			{TimeMs: start.Add(time.Minute).UnixMilli(), Job: fmt.Sprintf("job-%d", i), Event: schemas.EventStart, Cluster: "c1", GPUUUIDs: []string{"GPU-0000"}},
		}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.Publish(t.Context(), bus.JobsSubject("c1"), data); err != nil {
			t.Fatal(err)
		}
	}
}

func count(t *testing.T, s store.Store, sql string) uint64 {
	t.Helper()
	res, err := s.Query(context.Background(), sql, nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := res.Int(0, "n")
	if err != nil {
		t.Fatal(err)
	}
	return uint64(n)
}

// waitUntil runs check every 10 ms until it returns nil, and fails the test with
// check's last error once timeout has passed. The timeout only bounds a wait for
// something that must happen: it is at least a minute, so that a machine running
// other test suites beside this one (10 s was too short there) does not fail a
// test that would pass; a passing check returns at once.
func waitUntil(t *testing.T, what string, timeout time.Duration, check func() error) {
	t.Helper()
	timeout = max(timeout, time.Minute)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	expired := time.After(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		select {
		case <-tick.C:
		case <-expired:
			t.Fatalf("timed out after %v waiting for %s: %v", timeout, what, err)
		}
	}
}

// waitCaughtUp waits until ingest's consumers have every message delivered and
// acknowledged. It waits on progress, not a fixed time: it fails only once the
// backlog has not come below its lowest for 30 s (a slow machine catches up
// slowly; a livelock never does).
func waitCaughtUp(t *testing.T, js jetstream.JetStream, durable string) {
	t.Helper()
	const stall = 30 * time.Second
	lowest, lowAt := uint64(1<<63), time.Now()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		backlog, err := ingest.Backlog(t.Context(), js, durable)
		if err == nil {
			n := backlog["samples"] + backlog["jobs"]
			if n == 0 {
				return
			}
			if n < lowest {
				lowest, lowAt = n, time.Now()
			}
		}
		if time.Since(lowAt) > stall {
			t.Fatalf("ingest made no progress for %v: backlog %v (lowest %d), err %v", stall, backlog, lowest, err)
		}
		<-tick.C
	}
}

func startIngest(t *testing.T, e *env, cfg ingest.Config, opts ...ingest.Option) (stop func() error, ing *ingest.Ingester) {
	t.Helper()
	return startIngestTo(t, e, e.store, cfg, opts...)
}

// startIngestTo is startIngest writing to sink instead of the env's store.
func startIngestTo(t *testing.T, e *env, sink ingest.Sink, cfg ingest.Config, opts ...ingest.Option) (stop func() error, ing *ingest.Ingester) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ing, err := ingest.New(cfg, e.bus.JS, sink, append([]ingest.Option{ingest.WithLogger(log)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ing.Run(ctx) }()
	var once sync.Once
	var runErr error
	stop = func() error {
		once.Do(func() {
			cancel()
			runErr = <-done
		})
		return runErr
	}
	t.Cleanup(func() { _ = stop() })
	return stop, ing
}

func assertExact(t *testing.T, s store.Store, gpuRows, procRows, jobEvents uint64) {
	t.Helper()
	if got := count(t, s, "SELECT count() AS n FROM gpu_samples"); got != gpuRows {
		t.Errorf("gpu_samples has %d rows, collectors published %d", got, gpuRows)
	}
	if got := count(t, s, "SELECT count() AS n FROM process_samples"); got != procRows {
		t.Errorf("process_samples has %d rows, collectors published %d", got, procRows)
	}
	if got := count(t, s, "SELECT count() - uniqExact(node, gpu_uuid, ts) AS n FROM gpu_samples"); got != 0 {
		t.Errorf("gpu_samples has %d duplicate rows", got)
	}
	if got := count(t, s, "SELECT count() - uniqExact(node, gpu_uuid, pid, ts) AS n FROM process_samples"); got != 0 {
		t.Errorf("process_samples has %d duplicate rows", got)
	}
	// gpu_state_minute holds every GPU sample of the last two hours rolled up
	// once (its TTL is the wall clock's)…
	const recent = " WHERE ts >= toStartOfMinute(now() - INTERVAL 2 HOUR)"
	recentRows := count(t, s, "SELECT count() AS n FROM gpu_samples"+recent)
	if got := count(t, s, "SELECT toUInt64(sum(activity_samples) + sum(power_samples)) AS n FROM gpu_state_minute WHERE minute >= toStartOfMinute(now() - INTERVAL 2 HOUR)"); got != count(t, s, "SELECT count(coalesce(sm_active, gr_engine_active, gpu_util)) + count(power_w) AS n FROM gpu_samples"+recent) {
		t.Errorf("gpu_state_minute counts %d activity and power samples of the last two hours, gpu_samples has another number", got)
	}
	// …so the fleet page's view over it answers as the one over gpu_samples.
	state := func(view string) string {
		res, err := s.Query(t.Context(), "SELECT * FROM "+view+"(from = now64(3) - INTERVAL 2 HOUR, to = now64(3) + INTERVAL 1 HOUR) ORDER BY gpu_uuid", nil)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(res.Rows)
	}
	if recent, all := state("gpu_state_recent"), state("gpu_state_between"); recent != all || recentRows > 0 && all == "[]" {
		t.Errorf("gpu_state_recent:\n%.600s\ngpu_state_between:\n%.600s", recent, all)
	}
	if got := count(t, s, "SELECT count() AS n FROM job_events"); got != jobEvents {
		t.Errorf("job_events has %d rows, %d were published", got, jobEvents)
	}
	assertRollupMatchesView(t, s)
}

func TestExactlyOnce(t *testing.T) {
	e := newEnv(t)
	start := time.Now().Add(-time.Hour).Truncate(time.Second)
	// Redelivery is the fault tests' subject, not this one's: a long ack_wait keeps a
	// loaded machine's slow insert from being redelivered, so the ingester's own row
	// count (which counts a redelivered batch again, the store deduplicating it) is exact.
	cfg := testConfig()
	cfg.AckWait = time.Minute
	cfg.IntentTTL = max(cfg.IntentTTL, cfg.AckWait)
	stop, ing := startIngest(t, e, cfg)
	g, p := publish(t, e.bus.JS, 3, 40, start)
	publishJobs(t, e.bus.JS, 5, start)
	waitCaughtUp(t, e.bus.JS, testConfig().Durable)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	assertExact(t, e.store, g, p, 10)
	if st := ing.Stats(); st.RowsInserted != g+p+10 || st.DeadLetters != 0 {
		t.Errorf("stats %+v, want %d rows and no dead letters", st, g+p+10)
	}
	res, err := e.store.Query(t.Context(), "SELECT team, gpu_uuids, state FROM jobs WHERE job = 'job-3'", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 1 || store.FormatValue(res.Rows[0][0]) != "nlp" || store.FormatValue(res.Rows[0][2]) != "running" {
		t.Errorf("jobs view merged job-3 into %v, want team nlp, running", res.Rows)
	}
}

func TestRestartMidStream(t *testing.T) {
	e := newEnv(t)
	start := time.Now().Add(-time.Hour).Truncate(time.Second)
	var gpuRows, procRows uint64
	for round := 0; round < 3; round++ {
		stop, _ := startIngest(t, e, testConfig())
		g, p := publish(t, e.bus.JS, 2, 30, start.Add(time.Duration(round)*time.Minute))
		gpuRows, procRows = gpuRows+g, procRows+p
		// Stop ingest while batches are in flight; the next one takes over.
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	}
	stop, _ := startIngest(t, e, testConfig())
	waitCaughtUp(t, e.bus.JS, testConfig().Durable)
	_ = stop()
	assertExact(t, e.store, gpuRows, procRows, 0)
}

func TestCrashAtEveryPoint(t *testing.T) {
	for _, point := range []string{ingest.FaultAfterIntent, ingest.FaultAfterInsert, ingest.FaultAfterCommit} {
		t.Run(point, func(t *testing.T) {
			e := newEnv(t)
			start := time.Now().Add(-time.Hour).Truncate(time.Second)
			g, p := publish(t, e.bus.JS, 2, 20, start)
			publishJobs(t, e.bus.JS, 3, start)
			crashed := make(chan struct{})
			var once sync.Once
			fault := func(kind, at string) error {
				if at == point {
					once.Do(func() { close(crashed) })
					return errors.New("simulated crash")
				}
				return nil
			}
			stop, _ := startIngest(t, e, testConfig(), ingest.WithFault(fault))
			<-crashed
			err := stop()
			if err == nil || !strings.Contains(err.Error(), "simulated crash") {
				t.Fatalf("crashed ingest returned %v", err)
			}
			// A new ingest gets the unacked messages after ack_wait.
			stop2, ing2 := startIngest(t, e, testConfig())
			waitCaughtUp(t, e.bus.JS, testConfig().Durable)
			_ = stop2()
			assertExact(t, e.store, g, p, 6)
			if point != ingest.FaultAfterIntent && ing2.Stats().DedupHits == 0 {
				t.Errorf("after a crash at %s no redelivered message was matched to its batch", point)
			}
		})
	}
}

func TestDeadLetters(t *testing.T) {
	e := newEnv(t)
	start := time.Now().Add(-time.Hour).Truncate(time.Second)
	stop, ing := startIngest(t, e, testConfig())
	g, p := publish(t, e.bus.JS, 1, 10, start)

	enc := schemas.NewEncoder()
	future := schemas.SampleBatch{Cluster: "c1", Node: "n-future", GPUs: []schemas.GPUSample{schemas.NewGPUSample()}}
	future.GPUs[0].TimeMs, future.GPUs[0].GPUUUID = time.Now().Add(48*time.Hour).UnixMilli(), "GPU-f"
	futureBytes, _ := enc.Encode(nil, &future)
	badRatio := schemas.SampleBatch{Cluster: "c1", Node: "n-ratio", GPUs: []schemas.GPUSample{schemas.NewGPUSample()}}
	badRatio.GPUs[0].TimeMs, badRatio.GPUs[0].GPUUUID, badRatio.GPUs[0].SMActive = start.UnixMilli(), "GPU-r", 7
	ratioBytes, _ := enc.Encode(nil, &badRatio)
	// What no GPU can report: 1e30 W and -1e38 °C (they used to be stored).
	hot := schemas.SampleBatch{Cluster: "c1", Node: "n-physics", GPUs: []schemas.GPUSample{schemas.NewGPUSample(), schemas.NewGPUSample()}}
	hot.GPUs[0].TimeMs, hot.GPUs[0].GPUUUID, hot.GPUs[0].PowerW = start.UnixMilli(), "GPU-p", 1e30
	hotBytes, _ := enc.Encode(nil, &hot)
	cold := hot
	cold.GPUs = []schemas.GPUSample{schemas.NewGPUSample()}
	cold.GPUs[0].TimeMs, cold.GPUs[0].GPUUUID, cold.GPUs[0].TempC = start.UnixMilli(), "GPU-t", -1e38
	coldBytes, _ := enc.Encode(nil, &cold)
	// A good batch under a schema header this ingest does not read (it used to be
	// decoded as v1).
	goodV999 := schemas.SampleBatch{Cluster: "c1", Node: "n-v999", GPUs: []schemas.GPUSample{schemas.NewGPUSample()}}
	goodV999.GPUs[0].TimeMs, goodV999.GPUs[0].GPUUUID = start.UnixMilli(), "GPU-v"
	v999Bytes, _ := enc.Encode(nil, &goodV999)
	hostile := map[string][]byte{
		"malformed":      []byte("\xff\xff\xffnot protobuf"),
		"schema_version": {0x08, 0x63}, // schema_version = 99
		"future":         futureBytes,
		"ratio":          ratioBytes,
		"power":          hotBytes,
		"temperature":    coldBytes,
		"header-v999":    v999Bytes,
	}
	for name, data := range hostile {
		msg := &nats.Msg{Subject: bus.SamplesSubject("c1", name), Data: data, Header: nats.Header{}}
		if name == "header-v999" {
			msg.Header.Set(schemas.HeaderSchema, "samples/v999")
		}
		if _, err := e.bus.JS.PublishMsg(t.Context(), msg); err != nil {
			t.Fatal(err)
		}
	}
	g2, p2 := publish(t, e.bus.JS, 1, 10, start.Add(time.Hour))
	waitCaughtUp(t, e.bus.JS, testConfig().Durable)
	_ = stop()
	assertExact(t, e.store, g+g2, p+p2, 0)
	if got := ing.Stats().DeadLetters; got != uint64(len(hostile)) {
		t.Fatalf("dead letters = %d, want %d", got, len(hostile))
	}
	dl, err := e.bus.JS.Stream(t.Context(), bus.StreamDeadLetter)
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]int{}
	for seq := uint64(1); seq <= uint64(len(hostile)); seq++ {
		m, err := dl.GetMsg(t.Context(), seq)
		if err != nil {
			t.Fatal(err)
		}
		if m.Header.Get(ingest.HeaderError) == "" || m.Header.Get(ingest.HeaderSubject) == "" {
			t.Errorf("dead letter %d lacks error or subject headers: %v", seq, m.Header)
		}
		reasons[m.Header.Get(ingest.HeaderReason)]++
	}
	want := map[string]int{"malformed": 1, "schema_version": 2, "invalid_value": 4}
	if fmt.Sprint(reasons) != fmt.Sprint(want) {
		t.Errorf("dead-letter reasons %v, want %v", reasons, want)
	}
}

// TestSchemaEvolution: a newer collector's batch (with fields this ingest does not
// know) and an older collector's batch (without columns this ingest knows) are both
// stored.
func TestSchemaEvolution(t *testing.T) {
	e := newEnv(t)
	stop, ing := startIngest(t, e, testConfig())
	ts := time.Now().Add(-time.Hour).UnixMilli()
	newer, err := schemas.NewEncoder().Encode(nil, &schemas.SampleBatch{Cluster: "c1", Node: "newer",
		GPUs: []schemas.GPUSample{func() schemas.GPUSample { g := schemas.NewGPUSample(); g.TimeMs, g.GPUUUID = ts, "GPU-n"; return g }()}})
	if err != nil {
		t.Fatal(err)
	}
	newer = protowire.AppendTag(newer, 77, protowire.BytesType)
	newer = protowire.AppendBytes(newer, []byte("a field from the future"))
	older, err := proto.Marshal(&wirepb.SampleBatch{SchemaVersion: 1, Cluster: "c1", Node: "older", Dict: []string{"", "GPU-o"},
		Processes: &wirepb.ProcessColumns{TsDeltaMs: []int64{ts}, GpuUuid: []uint32{1}, Pid: []uint32{42}}})
	if err != nil {
		t.Fatal(err)
	}
	for node, m := range map[string][]byte{"newer": newer, "older": older} {
		if _, err := e.bus.JS.Publish(t.Context(), bus.SamplesSubject("c1", node), m); err != nil {
			t.Fatal(err)
		}
	}
	waitCaughtUp(t, e.bus.JS, testConfig().Durable)
	_ = stop()
	if ing.Stats().DeadLetters != 0 {
		t.Fatalf("dead letters: %d", ing.Stats().DeadLetters)
	}
	assertExact(t, e.store, 1, 1, 0)
	res, err := e.store.Query(t.Context(), "SELECT pid, fb_used_mib, sm_util FROM process_samples", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows[0][0] != uint64(42) || res.Rows[0][1] != uint64(0) || res.Rows[0][2] != nil {
		t.Errorf("older batch stored as %v, want pid 42, memory 0, sm_util NULL", res.Rows[0])
	}
}
