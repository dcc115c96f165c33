package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
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
	"github.com/gpupool/gpupool/store/clickhouse"
)

// loadGen publishes batches of one node's 8 GPUs × 64 processes at a target rate,
// each stamped with the time it is published, and remembers when each went out.
type loadGen struct {
	js       jetstream.JetStream
	template *schemas.SampleBatch
	enc      *schemas.Encoder

	mu      sync.Mutex
	sentAt  []time.Time // per message
	cumRows []uint64    // rows published up to and including each message
	rows    uint64
}

func newLoadGen(js jetstream.JetStream) *loadGen {
	tmpl := &schemas.SampleBatch{Cluster: "bench", Node: "n"}
	src := newDenseSource()
	_ = src.Sample(context.Background(), time.Now(), tmpl)
	return &loadGen{js: js, template: tmpl, enc: schemas.NewEncoder()}
}

// run publishes rowsPerSec for d (or until ctx ends), spread over 64 nodes.
func (g *loadGen) run(ctx context.Context, rowsPerSec float64, d time.Duration) error {
	perMsg := float64(g.template.Rows())
	interval := time.Duration(float64(time.Second) * perMsg / rowsPerSec)
	start := time.Now()
	for k := 0; ; k++ {
		due := start.Add(time.Duration(k) * interval)
		if due.Sub(start) >= d {
			return nil
		}
		if wait := time.Until(due); wait > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(wait):
			}
		}
		now := time.Now()
		b := g.template
		b.Node = "gpu-" + strconv.Itoa(k%64)
		ms := now.UnixMilli()
		for i := range b.GPUs {
			b.GPUs[i].TimeMs = ms
		}
		for i := range b.Processes {
			b.Processes[i].TimeMs = ms
		}
		data, err := g.enc.Encode(nil, b)
		if err != nil {
			return err
		}
		if _, err := g.js.PublishMsgAsync(&nats.Msg{Subject: bus.SamplesSubject("bench", b.Node), Data: data}); err != nil {
			return err
		}
		g.mu.Lock()
		g.rows += uint64(b.Rows() - len(b.GPUs))
		g.sentAt = append(g.sentAt, now)
		g.cumRows = append(g.cumRows, g.rows)
		g.mu.Unlock()
	}
}

// poller records how many process rows the store holds, every 50 ms.
type poller struct {
	at    []time.Time
	count []uint64
}

func (p *poller) run(ctx context.Context, s store.Store) {
	for ctx.Err() == nil {
		res, err := s.Query(context.Background(), "SELECT count() AS n FROM process_samples", nil)
		if err == nil {
			n, _ := res.Int(0, "n")
			p.at = append(p.at, time.Now())
			p.count = append(p.count, uint64(n))
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// latencies matches each message with the first poll that saw its rows stored
// (rows are stored in about the order they were sent) and returns the latencies of
// messages sent after warmup.
func latencies(g *loadGen, p *poller, warmup time.Time) []time.Duration {
	var out []time.Duration
	j := 0
	for k, sent := range g.sentAt {
		for j < len(p.count) && p.count[j] < g.cumRows[k] {
			j++
		}
		if j == len(p.count) {
			break
		}
		if sent.After(warmup) {
			out = append(out, p.at[j].Sub(sent))
		}
	}
	slices.Sort(out)
	return out
}

func pct(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[min(len(d)-1, int(q*float64(len(d))))]
}

// sustainedRate drains a backlog of dense batches and returns process rows/s.
func sustainedRate(b *testing.B) float64 {
	bt := bustest.Start(b)
	s := openStore(b)
	data := denseBatches(3000, benchProcs, time.Now().Add(-time.Hour))
	if err := publishAll(b.Context(), bt.JS, data); err != nil {
		b.Fatal(err)
	}
	ing, err := ingest.New(benchIngestConfig(), bt.JS, s)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(b.Context())
	done := make(chan error, 1)
	t0 := time.Now()
	go func() { done <- ing.Run(ctx) }()
	if err := drain(b.Context(), bt.JS, benchIngestConfig().Durable); err != nil {
		b.Fatal(err)
	}
	secs := time.Since(t0).Seconds()
	cancel()
	<-done
	noDeadLetters(b, bt.JS)
	return float64(3000*8*benchProcs) / secs
}

// BenchmarkIngestLatency measures sample-time-to-queryable at 10 % and 80 % of the
// sustained rate measured in the same run.
func BenchmarkIngestLatency(b *testing.B) {
	for b.Loop() {
		rate := sustainedRate(b)
		b.ReportMetric(rate, "sustained_rows/s")
		for _, load := range []float64{0.10, 0.80} {
			bt := bustest.Start(b)
			s := openStore(b)
			cfg := ingest.DefaultConfig()
			ing, err := ingest.New(cfg, bt.JS, s)
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(b.Context())
			var wg sync.WaitGroup
			wg.Add(2)
			go func() { defer wg.Done(); _ = ing.Run(ctx) }()
			p := &poller{}
			go func() { defer wg.Done(); p.run(ctx, s) }()
			g := newLoadGen(bt.JS)
			warmup := time.Now().Add(3 * time.Second)
			if err := g.run(b.Context(), load*rate, 20*time.Second); err != nil {
				b.Fatal(err)
			}
			if err := drain(b.Context(), bt.JS, cfg.Durable); err != nil {
				b.Fatal(err)
			}
			time.Sleep(200 * time.Millisecond) // one more poll
			cancel()
			wg.Wait()
			lat := latencies(g, p, warmup)
			name := fmt.Sprintf("%.0f%%", load*100)
			b.ReportMetric(float64(pct(lat, 0.5).Milliseconds()), "p50_ms@"+name)
			b.ReportMetric(float64(pct(lat, 0.99).Milliseconds()), "p99_ms@"+name)
			b.Logf("load %s of %.0f rows/s (%.0f rows/s, %d messages): sample→queryable p50 %v, p99 %v",
				name, rate, load*rate, len(lat), pct(lat, 0.5), pct(lat, 0.99))
		}
	}
}

// flaky is a store that can be made unreachable.
type flaky struct {
	ingest.Sink
	down atomic.Bool
}

func (f *flaky) Insert(ctx context.Context, table string, b *store.Block, token string) error {
	if f.down.Load() {
		return errors.New("connection refused")
	}
	return f.Sink.Insert(ctx, table, b, token)
}

// BenchmarkIngestOutageCatchUp takes the store away for 5 minutes
// (GPUPOOL_BENCH_OUTAGE overrides) while collectors publish at 10 % of the
// sustained rate, then measures how long ingest takes to catch up.
func BenchmarkIngestOutageCatchUp(b *testing.B) {
	outage := 5 * time.Minute
	if v := os.Getenv("GPUPOOL_BENCH_OUTAGE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatal(err)
		}
		outage = d
	}
	for b.Loop() {
		rate := sustainedRate(b)
		bt := bustest.Start(b)
		s := openStore(b)
		sink := &flaky{Sink: s}
		cfg := ingest.DefaultConfig()
		cfg.RetryMax = time.Second
		ing, err := ingest.New(cfg, bt.JS, sink)
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(b.Context())
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); _ = ing.Run(ctx) }()
		g := newLoadGen(bt.JS)
		genDone := make(chan error, 1)
		go func() { genDone <- g.run(ctx, 0.10*rate, outage+5*time.Minute) }()
		time.Sleep(5 * time.Second)
		sink.down.Store(true)
		time.Sleep(outage)
		g.mu.Lock()
		backlog := g.rows
		g.mu.Unlock()
		sink.down.Store(false)
		up := time.Now()
		// Caught up: everything published so far is stored and the consumer holds
		// no more than a batch.
		for {
			backlogs, err := ingest.Backlog(b.Context(), bt.JS, cfg.Durable)
			if err == nil && backlogs["samples"] < 1000 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		catchUp := time.Since(up)
		cancel()
		<-genDone
		wg.Wait()
		b.ReportMetric(catchUp.Seconds(), "catch_up_s")
		b.Logf("store down %v at %.0f rows/s (10%% of %.0f): %d rows backlog, caught up %v after the store came back",
			outage, 0.10*rate, rate, backlog, catchUp.Round(100*time.Millisecond))
	}
}

// BenchmarkIngestBacklogRSS fills JetStream with 10 million process rows
// (GPUPOOL_BENCH_BACKLOG_ROWS overrides), then
// runs ingest in a child process and reports its peak resident memory while it
// drains them.
func BenchmarkIngestBacklogRSS(b *testing.B) {
	// default: chdb.DefaultConfig and no Go memory limit; lean: what
	// docs/measurements.md recommends for an ingest process; no-engine: lean's
	// Go memory limit with a sink that drops every block once ingest has built
	// it, so ingest's own memory (NATS, decoding, batches, blocks) without the
	// embedded engine's, what an ingest writing to a ClickHouse server holds
	// besides its client's buffers; clickhouse: lean's Go memory limit with the
	// clickhouse-go backend writing to a ClickHouse server in another process (a
	// chDB endpoint, chdbtest.StartEndpoint), which then holds every row.
	for _, mode := range []string{"default", "lean", "no-engine", "clickhouse"} {
		b.Run(mode, func(b *testing.B) { backlogRSS(b, mode) })
	}
}

func backlogRSS(b *testing.B, mode string) {
	for b.Loop() {
		dir, port := b.TempDir(), bustest.FreePort(b)
		bt := bustest.StartOn(b, dir, port)
		rows := 10_000_000
		if v := os.Getenv("GPUPOOL_BENCH_BACKLOG_ROWS"); v != "" { // shorter runs while iterating
			n, err := strconv.Atoi(v)
			if err != nil {
				b.Fatal(err)
			}
			rows = n
		}
		msgs := rows / (8 * benchProcs)
		publishBacklog(b, bt.JS, msgs)
		dataDir := filepath.Join(b.TempDir(), "chdb")
		cmd := exec.Command(childBinary(b))
		cmd.Env = append(os.Environ(), "GPUPOOL_BENCH_CHILD=1", "GPUPOOL_CHILD_NATS="+bt.URL, "GPUPOOL_CHILD_DATA="+dataDir)
		goLimit := "GOMEMLIMIT=" + cmp.Or(os.Getenv("GPUPOOL_BENCH_GOMEMLIMIT"), leanGoMemLimit)
		var server *clickhouse.Store // the clickhouse mode's database, in the endpoint's process
		switch mode {
		case "lean":
			cmd.Env = append(cmd.Env, "GPUPOOL_CHILD_LEAN=1", goLimit)
		case "no-engine":
			cmd.Env = append(cmd.Env, "GPUPOOL_CHILD_SINK=discard", goLimit)
		case "clickhouse":
			var addr string
			server, addr = startServer(b)
			cmd.Env = append(cmd.Env, "GPUPOOL_CHILD_CLICKHOUSE="+addr, "GPUPOOL_CHILD_CLICKHOUSE_DB="+server.Database(), goLimit)
		}
		cmd.Stderr = os.Stderr
		t0 := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		exited := make(chan error, 1) // a child that stops before the backlog is drained fails the run, not hangs it
		go func() { exited <- cmd.Wait() }()
		var peak, peakAnon, peakFile uint64
		for {
			select {
			case err := <-exited:
				b.Fatalf("%s: ingest child exited before the backlog drained: %v (its stderr is above)", mode, err)
			default:
			}
			if v := vmHWM(cmd.Process.Pid); v > peak {
				peak = v
			}
			if anon, file := rssParts(cmd.Process.Pid); anon+file > 0 {
				peakAnon, peakFile = max(peakAnon, anon), max(peakFile, file)
			}
			backlog, err := ingest.Backlog(b.Context(), bt.JS, ingest.DefaultConfig().Durable)
			if err == nil && backlog["samples"] == 0 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		took := time.Since(t0)
		if v := vmHWM(cmd.Process.Pid); v > peak {
			peak = v
		}
		_, endFile := rssParts(cmd.Process.Pid) // the code the engine ran, without what only its start-up touched
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-exited
		noDeadLetters(b, bt.JS)
		if server != nil {
			serverHoldsAll(b, server, msgs*8*benchProcs)
		}
		b.ReportMetric(float64(peak)/1024, "peak_rss_MiB")
		b.ReportMetric(float64(peakAnon)/1024, "peak_anon_MiB")
		b.ReportMetric(float64(peakFile)/1024, "peak_file_MiB")
		b.ReportMetric(float64(endFile)/1024, "end_file_MiB")
		b.Logf("%s: drained %d process rows in %v (%.0f rows/s); ingest peak RSS %.0f MiB (sampled every 100 ms: anonymous %.0f MiB, file-backed %.0f MiB, mostly libchdb.so's code when the engine is in; file-backed at the end %.0f MiB)",
			mode,
			msgs*8*benchProcs, took.Round(time.Second), float64(msgs*8*benchProcs)/took.Seconds(), float64(peak)/1024, float64(peakAnon)/1024, float64(peakFile)/1024, float64(endFile)/1024)
	}
}

// publishBacklog publishes msgs dense batches, every row a new one: pools of 512
// batches (8 seconds of 64 nodes), each pool 8 seconds after the one before, so
// that ingest's content dedup drops none of them.
func publishBacklog(b *testing.B, js jetstream.JetStream, msgs int) {
	b.Helper()
	const pool = 512
	start := time.Now().Add(-time.Hour)
	for k := 0; k < msgs; k += pool {
		batches := denseBatches(min(pool, msgs-k), benchProcs, start.Add(time.Duration(k/64)*time.Second))
		if err := publishAll(b.Context(), js, batches); err != nil {
			b.Fatal(err)
		}
	}
}

// startServer starts a chDB endpoint (a ClickHouse server in a process of its
// own, stopped when the benchmark ends) and returns a store on a database of
// its own there, migrated, and the server's native address.
func startServer(b *testing.B) (*clickhouse.Store, string) {
	b.Helper()
	ep, err := chdbtest.StartEndpoint(b.Context(), b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(ep.Stop)
	cfg := clickhouse.DefaultConfig()
	cfg.Addr, cfg.Database = []string{ep.TCPAddr}, "gpupool_bench"
	s, err := clickhouse.Open(b.Context(), cfg)
	if err != nil {
		b.Fatalf("open the endpoint %s: %v", ep.TCPAddr, err)
	}
	b.Cleanup(func() { _ = s.Close() })
	if _, err := store.Migrate(b.Context(), s, schemas.MigrationParams{RawTTLDays: 3650}); err != nil {
		b.Fatalf("migrate the endpoint %s: %v", ep.TCPAddr, err)
	}
	return s, ep.TCPAddr
}

// serverHoldsAll fails the benchmark unless process_samples holds want rows.
func serverHoldsAll(b *testing.B, s store.Store, want int) {
	b.Helper()
	res, err := s.Query(b.Context(), "SELECT count() AS n FROM process_samples", nil)
	if err != nil {
		b.Fatalf("count the server's process_samples: %v", err)
	}
	if n, _ := res.Int(0, "n"); n != int64(want) {
		b.Fatalf("the server's process_samples holds %d rows after the drain, %d were published", n, want)
	}
}

// childBinary copies the test binary for the ingest child to run: a real ingest
// process shares its executable's pages with no other process, and the kernel
// releases none of a page another process maps (the store releases the
// executable's start-up code as it does the engine's).
func childBinary(b *testing.B) string {
	b.Helper()
	src, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	in, err := os.Open(src)
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	dst := filepath.Join(b.TempDir(), "ingest-child")
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		b.Fatal(err)
	}
	if err := out.Close(); err != nil {
		b.Fatal(err)
	}
	return dst
}

// leanGoMemLimit is the Go runtime's soft memory limit recommended for an ingest
// process: the heap holds about two batches (500,000 rows each, 42–50 MB live at
// the drain's peak); above that the collector runs instead of the heap growing.
// GPUPOOL_BENCH_GOMEMLIMIT tries another (docs/measurements.md#memory).
const leanGoMemLimit = "64MiB"

// vmHWM reads a process's peak resident set size in KiB.
func vmHWM(pid int) uint64 { return procStatus(pid, "VmHWM:") }

// rssParts reads a process's resident memory now, in KiB: anonymous (heaps,
// caches) and file-backed (mapped code and data).
func rssParts(pid int) (anon, file uint64) {
	return procStatus(pid, "RssAnon:"), procStatus(pid, "RssFile:")
}

// procStatus reads one KiB figure of /proc/<pid>/status.
func procStatus(pid int, key string) uint64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, key) {
			f := strings.Fields(line)
			if len(f) >= 2 {
				v, _ := strconv.ParseUint(f[1], 10, 64)
				return v
			}
		}
	}
	return 0
}

// ingestChild is BenchmarkIngestBacklogRSS's child process (see TestMain): plain
// ingest with default settings on its own chDB data directory, until SIGTERM; with
// GPUPOOL_CHILD_LEAN the engine takes chdb.LeanConfig (the parent also sets
// GOMEMLIMIT, the Go runtime's soft memory limit; GPUPOOL_BENCH_KEEP_CODE=1
// keeps the engine's start-up code resident, GPUPOOL_BENCH_MERGE_THREADS sets
// its merges at once, GPUPOOL_BENCH_RELEASE_CODE_EVERY how often it releases its
// code again as it writes); GPUPOOL_CHILD_SINK=discard stores nothing, and
// GPUPOOL_CHILD_CLICKHOUSE (a server's native host:port) with
// GPUPOOL_CHILD_CLICKHOUSE_DB writes there instead of an engine of its own.
func ingestChild() error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if os.Getenv("GPUPOOL_CHILD_SINK") == "discard" {
		return runChildIngest(ctx, droppingSink{}, nil)
	}
	if addr := os.Getenv("GPUPOOL_CHILD_CLICKHOUSE"); addr != "" {
		return serverChild(ctx, addr, os.Getenv("GPUPOOL_CHILD_CLICKHOUSE_DB"))
	}
	cfg := chdb.DefaultConfig()
	if os.Getenv("GPUPOOL_CHILD_LEAN") != "" {
		cfg = chdb.LeanConfig()
		// GPUPOOL_BENCH_KEEP_CODE=1: lean with the engine's start-up code kept
		// resident, to measure what releasing it saves.
		cfg.ReleaseStartupCode = os.Getenv("GPUPOOL_BENCH_KEEP_CODE") == ""
		// GPUPOOL_BENCH_MERGE_THREADS=N: lean with another number of merges at
		// once (0: the engine's default), to measure what one saves.
		if n, err := strconv.Atoi(os.Getenv("GPUPOOL_BENCH_MERGE_THREADS")); err == nil {
			cfg.MergeThreads = n
		}
		// GPUPOOL_BENCH_RELEASE_CODE_EVERY=D: lean releasing the engine's code
		// again every D as it writes (0: only at open), to measure what it saves.
		if d, err := time.ParseDuration(os.Getenv("GPUPOOL_BENCH_RELEASE_CODE_EVERY")); err == nil {
			cfg.ReleaseCodeEvery = d
		}
		if !cfg.ReleaseStartupCode {
			cfg.ReleaseCodeEvery = 0
		}
	}
	cfg.Path, cfg.LibPath = os.Getenv("GPUPOOL_CHILD_DATA"), chdbtest.LibPath()
	s, err := chdb.Open(cfg)
	if err != nil {
		return err
	}
	defer s.Close()
	if _, err := store.Migrate(ctx, s, schemas.MigrationParams{RawTTLDays: 3650}); err != nil {
		return err
	}
	return runChildIngest(ctx, s, s)
}

// serverChild runs ingest into database db of the ClickHouse server at addr
// (native protocol), migrated already, through the clickhouse-go backend. The
// engine is the server's, in another process: memLog reads none.
func serverChild(ctx context.Context, addr, db string) error {
	cfg := clickhouse.DefaultConfig()
	cfg.Addr, cfg.Database = []string{addr}, db
	s, err := clickhouse.Open(ctx, cfg)
	if err != nil {
		return fmt.Errorf("open the ClickHouse server %s: %w", addr, err)
	}
	defer s.Close()
	return runChildIngest(ctx, s, nil)
}

// droppingSink accepts every block and keeps nothing: ingest without a store.
type droppingSink struct{}

func (droppingSink) Insert(context.Context, string, *store.Block, string) error { return nil }

// runChildIngest runs ingest into sink until ctx ends; st, when there is one, is
// the engine memLog reads.
func runChildIngest(ctx context.Context, sink ingest.Sink, st store.Store) error {
	nc, err := bus.Connect(bus.ClientConfig{URL: os.Getenv("GPUPOOL_CHILD_NATS")}, "ingest-child", nil)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	icfg := ingest.DefaultConfig()
	// GPUPOOL_BENCH_BATCH_ROWS tries another batch size (docs/measurements.md#memory).
	if n, err := strconv.Atoi(os.Getenv("GPUPOOL_BENCH_BATCH_ROWS")); err == nil {
		icfg.BatchRows = n
	}
	// GPUPOOL_BENCH_DEDUP_ROWS=N keeps another number of committed rows' content
	// keys (0: none), to measure what the content dedup holds.
	if n, err := strconv.Atoi(os.Getenv("GPUPOOL_BENCH_DEDUP_ROWS")); err == nil {
		icfg.DedupRows = n
	}
	ing, err := ingest.New(icfg, js, sink)
	if err != nil {
		return err
	}
	if os.Getenv("GPUPOOL_BENCH_MEMLOG") != "" {
		go memLog(ctx, st)
	}
	return ing.Run(ctx)
}

// heapMax is the largest Go heap memLog has seen; with GPUPOOL_BENCH_HEAPPROF
// set, the heap profile at that moment is written there.
var heapMax uint64

// memLog prints, every second, where the child's memory is: the Go heap and the
// engine's own accounting (GPUPOOL_BENCH_MEMLOG=1), and keeps the heap profile of
// the largest heap in GPUPOOL_BENCH_HEAPPROF's file when that is set.
func memLog(ctx context.Context, s store.Store) {
	for ctx.Err() == nil {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		engine := "-" // none in the process
		extra := ""
		if s != nil {
			engine = "?"
			if res, err := s.Query(ctx, "SELECT value FROM system.metrics WHERE metric = 'MemoryTracking'", nil); err == nil {
				v, _ := res.Float(0, "value")
				engine = fmt.Sprintf("%.0f", v/(1<<20))
			}
			// The allocator's own figures (allocated, active, resident, retained:
			// resident less active is freed memory it keeps), and the running
			// merges: (table, parts, MiB, algorithm).
			if res, err := s.Query(ctx, "SELECT arrayFilter(l -> l LIKE 'Allocated:%', splitByChar('\\n', stats))[1] AS l FROM system.jemalloc_stats", nil); err == nil {
				l, _ := res.String(0, "l")
				extra += "; allocator " + l
			}
			if res, err := s.Query(ctx, "SELECT toString(groupArray((table, num_parts, intDiv(memory_usage, 1048576), merge_algorithm))) AS l FROM system.merges", nil); err == nil {
				l, _ := res.String(0, "l")
				extra += "; merges " + l
			}
		}
		if f := os.Getenv("GPUPOOL_BENCH_HEAPPROF"); f != "" && ms.HeapInuse > heapMax {
			heapMax = ms.HeapInuse
			if w, err := os.Create(f); err == nil {
				_ = pprof.WriteHeapProfile(w)
				w.Close()
			}
		}
		anon, file := rssParts(os.Getpid())
		fmt.Fprintf(os.Stderr, "child mem: go heap in use %d MiB, go sys %d MiB, engine tracked %s MiB, rss anon %d MiB, file %d MiB (%s), threads %d%s\n",
			ms.HeapInuse>>20, ms.Sys>>20, engine, anon>>10, file>>10, fileRSSByFile(), procStatus(os.Getpid(), "Threads:"), extra)
		time.Sleep(time.Second)
	}
}

// fileRSSByFile sums /proc/self/smaps' file-backed resident KiB per mapped
// file, the largest first ("libchdb.so 70 MiB, ingest-child 9 MiB").
func fileRSSByFile() string {
	data, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return err.Error()
	}
	kib := map[string]uint64{}
	var file string
	for line := range strings.Lines(string(data)) {
		fs := strings.Fields(line)
		switch {
		case len(fs) >= 5 && strings.Contains(fs[0], "-") && !strings.HasSuffix(fs[0], ":"):
			file = ""
			if len(fs) >= 6 && strings.HasPrefix(fs[5], "/") {
				file = filepath.Base(fs[5])
			}
		case len(fs) >= 2 && fs[0] == "Rss:" && file != "":
			v, _ := strconv.ParseUint(fs[1], 10, 64)
			kib[file] += v
		case len(fs) >= 2 && fs[0] == "Anonymous:" && file != "": // a private mapping's written pages are not the file's
			v, _ := strconv.ParseUint(fs[1], 10, 64)
			kib[file] -= v
		}
	}
	names := slices.SortedFunc(maps.Keys(kib), func(a, b string) int { return cmp.Compare(kib[b], kib[a]) })
	var parts []string
	for _, n := range names[:min(3, len(names))] {
		parts = append(parts, fmt.Sprintf("%s %d MiB", n, kib[n]>>10))
	}
	return strings.Join(parts, ", ")
}
