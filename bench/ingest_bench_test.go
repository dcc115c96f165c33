package bench

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/bus/bustest"
	"github.com/gpupool/gpupool/collector/sim"
	"github.com/gpupool/gpupool/ingest"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

func TestMain(m *testing.M) {
	if os.Getenv("GPUPOOL_BENCH_CHILD") != "" {
		if err := ingestChild(); err != nil {
			fmt.Fprintln(os.Stderr, "ingest child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	chdbtest.Main(m)
}

// denseMsg is one encoded sample batch and the subject its node publishes it on:
// ingest stores a batch only from its own cluster's and node's subject (node
// restriction) and dead-letters it from any other.
type denseMsg struct {
	subject string
	data    []byte
}

// denseBatches builds n batches of one node each: 8 GPUs × procs processes (an
// inference node serving many small models), values drifting like real telemetry.
func denseBatches(n, procs int, start time.Time) []denseMsg {
	rng := rand.New(rand.NewPCG(1, 2))
	enc := schemas.NewEncoder()
	out := make([]denseMsg, 0, n)
	nodes := 64
	util := make([]float32, nodes*8*procs)
	for i := range util {
		util[i] = rng.Float32() * 0.5
	}
	for k := 0; k < n; k++ {
		node := k % nodes
		at := start.Add(time.Duration(k/nodes) * time.Second).UnixMilli()
		b := &schemas.SampleBatch{Cluster: "bench", Node: fmt.Sprintf("gpu-%03d", node), CollectorID: "bench", Seq: uint64(k)}
		for g := 0; g < 8; g++ {
			s := schemas.NewGPUSample()
			s.TimeMs, s.GPUUUID, s.GPUIndex = at, fmt.Sprintf("GPU-%03d-%d", node, g), uint32(g)
			s.Model, s.Card, s.FBTotalMiB, s.FBUsedMiB = "NVIDIA H100 80GB HBM3", "H100-80GB", 81559, 60000
			s.SMActive, s.GrEngineActive, s.GPUUtil, s.PowerW, s.TempC = 0.5, 0.6, 0.9, 400, 60
			b.GPUs = append(b.GPUs, s)
			for p := 0; p < procs; p++ {
				i := (node*8+g)*procs + p
				util[i] = min(max(util[i]+(rng.Float32()-0.5)*0.05, 0), 1)
				b.Processes = append(b.Processes, schemas.ProcessSample{
					TimeMs: at, GPUUUID: s.GPUUUID, PID: uint32(10000 + g*procs + p), ProcessName: "tritonserver",
					Job: fmt.Sprintf("k8s/serving/pod-%03d-%d", node, g), FBUsedMiB: uint32(800 + p),
					SMUtil: util[i], MemUtil: util[i] / 2,
				})
			}
		}
		data, err := enc.Encode(nil, b)
		if err != nil {
			panic(err)
		}
		out = append(out, denseMsg{subject: bus.SamplesSubject(b.Cluster, b.Node), data: data})
	}
	return out
}

func benchIngestConfig() ingest.Config {
	cfg := ingest.DefaultConfig()
	cfg.BatchRows = 500_000
	cfg.FetchMax = 500
	// With a backlog, batches fill by rows; a short age keeps the last, partial batch
	// from adding a second to the measurement.
	cfg.BatchAge = 200 * time.Millisecond
	return cfg
}

func publishAll(ctx context.Context, js jetstream.JetStream, msgs []denseMsg) error {
	futures := make([]jetstream.PubAckFuture, 0, len(msgs))
	for _, m := range msgs {
		f, err := js.PublishMsgAsync(&nats.Msg{Subject: m.subject, Data: m.data})
		if err != nil {
			return err
		}
		futures = append(futures, f)
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		return ctx.Err()
	}
	for _, f := range futures {
		select {
		case err := <-f.Err():
			return err
		default:
		}
	}
	return nil
}

func drain(ctx context.Context, js jetstream.JetStream, durable string) error {
	for {
		backlog, err := ingest.Backlog(ctx, js, durable)
		if err == nil && backlog["samples"] == 0 && backlog["jobs"] == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("backlog %v: %w", backlog, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// noDeadLetters fails b when ingest dead-lettered any message, naming how many and
// the first one's subject, reason and error: a refused batch is never stored, and a
// rate of drained messages would then measure the refusals.
func noDeadLetters(b *testing.B, js jetstream.JetStream) {
	b.Helper()
	st, err := js.Stream(b.Context(), bus.StreamDeadLetter)
	if err != nil {
		b.Fatalf("reading stream %s: %v", bus.StreamDeadLetter, err)
	}
	state := st.CachedInfo().State
	if state.Msgs == 0 {
		return
	}
	m, err := st.GetMsg(b.Context(), state.FirstSeq)
	if err != nil {
		b.Fatalf("ingest dead-lettered %d messages; reading the first: %v", state.Msgs, err)
	}
	b.Fatalf("ingest dead-lettered %d messages; the first, from %s: %s: %s", state.Msgs,
		m.Header.Get(ingest.HeaderSubject), m.Header.Get(ingest.HeaderReason), m.Header.Get(ingest.HeaderError))
}

func countRows(ctx context.Context, s store.Store, table string) (uint64, error) {
	res, err := s.Query(ctx, "SELECT count() AS n FROM "+table, nil)
	if err != nil {
		return 0, err
	}
	n, err := res.Int(0, "n")
	return uint64(n), err
}

func sumColumn(ctx context.Context, s store.Store, table, column string) (uint64, error) {
	res, err := s.Query(ctx, "SELECT toUInt64(sum("+column+")) AS n FROM "+table, nil)
	if err != nil {
		return 0, err
	}
	n, err := res.Int(0, "n")
	return uint64(n), err
}

func openStore(b *testing.B) *chdb.Store {
	s := chdbtest.Open(b)
	if _, err := store.Migrate(b.Context(), s, schemas.MigrationParams{RawTTLDays: 3650}); err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkIngestThroughput measures process-sample rows per second through NATS →
// ingest → chDB, and in the same run the rate at which chDB bulk-loads the same rows
// directly from a Native file.
func BenchmarkIngestThroughput(b *testing.B) {
	const msgs, procs = 6000, 64 // 3,072,000 process rows
	start := time.Now().Add(-2 * time.Hour).Truncate(time.Hour)
	data := denseBatches(msgs, procs, start)
	for b.Loop() {
		ctx := b.Context()
		bt := bustest.Start(b)
		s := openStore(b)

		t0 := time.Now()
		if err := publishAll(ctx, bt.JS, data); err != nil {
			b.Fatal(err)
		}
		publishSecs := time.Since(t0).Seconds()

		// Drain the backlog: the sustained rate of ingest when it is the bottleneck.
		ing, err := ingest.New(benchIngestConfig(), bt.JS, s, ingest.WithLogger(benchLog()))
		if err != nil {
			b.Fatal(err)
		}
		ictx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		t1 := time.Now()
		cpu1 := cpuTime()
		go func() { done <- ing.Run(ictx) }()
		if err := drain(ctx, bt.JS, benchIngestConfig().Durable); err != nil {
			b.Fatal(err)
		}
		ingestSecs := time.Since(t1).Seconds()
		ingestCPU := cpuTime() - cpu1
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		noDeadLetters(b, bt.JS)
		procRows, err := countRows(ctx, s, "process_samples")
		if err != nil {
			b.Fatal(err)
		}
		if want := uint64(msgs * 8 * procs); procRows != want {
			b.Fatalf("stored %d process rows, published %d", procRows, want)
		}
		rolled, err := sumColumn(ctx, s, "process_minute", "samples")
		if err != nil {
			b.Fatal(err)
		}
		if rolled != procRows {
			b.Fatalf("process_minute counts %d samples, process_samples holds %d", rolled, procRows)
		}

		// The same rows, bulk-loaded by chDB from a Native file.
		file := filepath.Join(b.TempDir(), "process_samples.native")
		if err := s.Exec(ctx, "INSERT INTO FUNCTION file({f:String}, 'Native') SELECT * FROM process_samples", store.Params{"f": file}); err != nil {
			b.Fatal(err)
		}
		if err := s.Exec(ctx, "CREATE TABLE process_samples_direct AS process_samples", nil); err != nil {
			b.Fatal(err)
		}
		// The direct loads start on an idle engine: ingest's last merges would
		// otherwise run behind the first and slow it by chance.
		settled := mergesSettled(b, s)
		t2 := time.Now()
		if err := s.Exec(ctx, "INSERT INTO process_samples_direct SELECT * FROM file({f:String}, 'Native')", store.Params{"f": file}); err != nil {
			b.Fatal(err)
		}
		directSecs := time.Since(t2).Seconds()
		pipeline := float64(procRows) / ingestSecs
		direct := float64(procRows) / directSecs
		b.ReportMetric(float64(procRows)/publishSecs, "publish_rows/s")
		b.ReportMetric(pipeline, "ingest_rows/s")
		b.ReportMetric(direct, "direct_rows/s")
		b.ReportMetric(pipeline/direct, "ingest/direct")
		b.ReportMetric(ingestCPU.Seconds()/float64(procRows)*1e6, "cpu_µs/row")
		if !settled {
			b.Log("the engine was still merging after 60 s: a direct load ran beside a merge")
		}
		b.Logf("%d process rows: publish %.0f rows/s, NATS→ingest→chDB %.0f rows/s, chDB direct from file %.0f rows/s (ratio %.2f)",
			procRows, float64(procRows)/publishSecs, pipeline, direct, pipeline/direct)
	}
}

// mergesSettled waits, up to a minute, until the engine runs no merge, and says
// whether it got there.
func mergesSettled(b *testing.B, s store.Store) bool {
	b.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		n, err := countRows(b.Context(), s, "system.merges")
		if err != nil {
			b.Fatal(err)
		}
		if n == 0 {
			return true
		}
	}
	return false
}

// BenchmarkBytesPerRow runs a simulated day of the default fleet through the
// pipeline, merges the parts, and reports bytes on disk per row.
func BenchmarkBytesPerRow(b *testing.B) {
	for b.Loop() {
		ctx := b.Context()
		bt := bustest.Start(b)
		s := openStore(b)
		cfg := sim.DefaultConfig()
		cfg.Start = time.Now().UTC().Truncate(24 * time.Hour).Add(-24 * time.Hour)
		fleet, err := sim.New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		enc := schemas.NewEncoder()
		var msgs [][]byte
		var subjects []string
		for t := cfg.Start; t.Before(cfg.Start.Add(24 * time.Hour)); t = t.Add(cfg.Tick) {
			fleet.Advance(t)
			for _, n := range fleet.Nodes() {
				batch := &schemas.SampleBatch{Cluster: n.Cluster(), Node: n.Name()}
				if err := n.Sample(ctx, t, batch); err != nil {
					b.Fatal(err)
				}
				data, err := enc.Encode(nil, batch)
				if err != nil {
					b.Fatal(err)
				}
				msgs = append(msgs, data)
				subjects = append(subjects, bus.SamplesSubject(n.Cluster(), n.Name()))
			}
		}
		for i := range msgs {
			if _, err := bt.JS.PublishMsgAsync(&nats.Msg{Subject: subjects[i], Data: msgs[i]}); err != nil {
				b.Fatal(err)
			}
		}
		<-bt.JS.PublishAsyncComplete()
		ing, err := ingest.New(benchIngestConfig(), bt.JS, s)
		if err != nil {
			b.Fatal(err)
		}
		ictx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- ing.Run(ictx) }()
		if err := drain(ctx, bt.JS, benchIngestConfig().Durable); err != nil {
			b.Fatal(err)
		}
		cancel()
		<-done
		noDeadLetters(b, bt.JS)
		for _, table := range []string{"gpu_samples", "process_samples"} {
			if err := s.Exec(ctx, "OPTIMIZE TABLE "+table+" FINAL", nil); err != nil {
				b.Fatal(err)
			}
			res, err := s.Query(ctx, `SELECT sum(rows) AS rows, sum(bytes_on_disk) AS bytes, sum(data_uncompressed_bytes) AS raw
				FROM system.parts WHERE active AND database = currentDatabase() AND table = {t:String}`, store.Params{"t": table})
			if err != nil {
				b.Fatal(err)
			}
			rows, _ := res.Float(0, "rows")
			bytes, _ := res.Float(0, "bytes")
			raw, _ := res.Float(0, "raw")
			b.ReportMetric(bytes/rows, table+"_bytes/row")
			b.Logf("%s: %.0f rows, %.2f bytes/row on disk after merges (%.1f uncompressed, %.1fx)", table, rows, bytes/rows, raw/rows, raw/bytes)
		}
	}
}

func benchLog() *slog.Logger {
	if os.Getenv("GPUPOOL_BENCH_LOG") == "" {
		return nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
