package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/bus/bustest"
	"github.com/gpupool/gpupool/collector"
	"github.com/gpupool/gpupool/ingest"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

// jsCluster is a JetStream cluster of three nats-server instances on loopback,
// routed to each other, each with its own store directory; a node can be killed
// and started again on the same ports and store.
type jsCluster struct {
	t     testing.TB
	opts  []*server.Options
	nodes []*server.Server
	urls  string
}

func startJSCluster(t testing.TB) *jsCluster {
	t.Helper()
	// The ports are free when picked and may be taken before a node listens
	// (other test binaries run beside this one): a cluster that does not start
	// is built again on new ports.
	for attempt := 1; ; attempt++ {
		c, err := tryJSCluster(t)
		if err == nil {
			t.Cleanup(func() {
				for i := range c.nodes {
					c.kill(i)
				}
			})
			return c
		}
		if attempt == 3 {
			t.Fatalf("JetStream cluster, attempt %d: %v", attempt, err)
		}
		t.Logf("JetStream cluster, attempt %d: %v; again on new ports", attempt, err)
	}
}

func tryJSCluster(t testing.TB) (*jsCluster, error) {
	const n = 3
	c := &jsCluster{t: t, nodes: make([]*server.Server, n)}
	var routes, clients []string
	ports := make([][2]int, n)
	for i := range ports {
		ports[i] = [2]int{bustest.FreePort(t), bustest.FreePort(t)}
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", ports[i][1]))
		clients = append(clients, fmt.Sprintf("nats://127.0.0.1:%d", ports[i][0]))
	}
	c.urls = strings.Join(clients, ",")
	dir := t.TempDir()
	for i := range n {
		c.opts = append(c.opts, &server.Options{
			ServerName: fmt.Sprintf("n%d", i+1), Host: "127.0.0.1", Port: ports[i][0],
			JetStream: true, StoreDir: filepath.Join(dir, fmt.Sprintf("n%d", i+1)),
			Cluster: server.ClusterOpts{Name: "gpupool", Host: "127.0.0.1", Port: ports[i][1]},
			Routes:  server.RoutesFromStr(strings.Join(routes, ",")),
			NoLog:   true, NoSigs: true,
		})
	}
	for i := range n {
		if err := c.startErr(i); err != nil {
			for j := range c.nodes {
				c.kill(j)
			}
			return nil, err
		}
	}
	return c, nil
}

// start starts node i again on its ports and store (a restart in the scenario).
func (c *jsCluster) start(i int) {
	c.t.Helper()
	if err := c.startErr(i); err != nil {
		c.t.Fatal(err)
	}
}

func (c *jsCluster) startErr(i int) error {
	s, err := server.NewServer(c.opts[i])
	if err != nil {
		return fmt.Errorf("node %d: %w", i+1, err)
	}
	go s.Start()
	if !s.ReadyForConnections(30 * time.Second) {
		s.Shutdown()
		return fmt.Errorf("node %d did not start within 30 s (port %d or %d taken?)", i+1, c.opts[i].Port, c.opts[i].Cluster.Port)
	}
	c.nodes[i] = s
	return nil
}

func (c *jsCluster) kill(i int) {
	if s := c.nodes[i]; s != nil {
		s.Shutdown()
		s.WaitForShutdown()
		c.nodes[i] = nil
	}
}

// index is the node named name (a server name), or -1.
func (c *jsCluster) index(name string) int {
	for i, o := range c.opts {
		if o.ServerName == name {
			return i
		}
	}
	return -1
}

// connect is a client that knows every node and reconnects forever, as a
// collector or ingest given bus.url with the three URLs does.
func (c *jsCluster) connect(t testing.TB, name string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(c.urls, nats.Name(name), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond),
		nats.RetryOnFailedConnect(true), nats.Timeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// streamLeader is the server leading stream name, waiting for one to be elected.
func streamLeader(ctx context.Context, js jetstream.JetStream, name string) (string, error) {
	for {
		st, err := js.Stream(ctx, name)
		if err == nil {
			if info, err := st.Info(ctx); err == nil && info.Cluster != nil && info.Cluster.Leader != "" {
				return info.Cluster.Leader, nil
			}
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("stream %s: no leader: %w", name, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stoppable is the collectors' source: the dense node until stopped, then no
// more samples (the collectors keep running to drain their spools).
type stoppable struct {
	src     *denseSource
	stopped *atomic.Bool
}

func (s stoppable) Sample(ctx context.Context, at time.Time, b *schemas.SampleBatch) error {
	if s.stopped.Load() {
		return errors.New("sampling stopped")
	}
	return s.src.Sample(ctx, at, b)
}

// faultFigures are what one run of the fault scenario measured.
type faultFigures struct {
	published, stored, duplicates uint64 // GPU rows
	procPublished, procStored     uint64 // process rows
	spooled, ingestRestarts       uint64
	batches, streamMsgs           uint64        // sample batches handed over, and the samples stream's messages
	catchUp                       time.Duration // the cluster back → everything stored
}

// runNodeLoss runs collectors publishing through the 3-node cluster (streams at
// replicas 3) and two ingest processes consuming into chDB; after phase, it kills
// the samples stream's leader, after another phase a second node (the streams lose
// their quorum: collectors spool to disk), after a third brings both back, after a
// fourth kills all three (the whole cluster down), after a fifth starts them all
// again, then stops sampling and waits until every spool is drained and ingest has
// caught up.
func runNodeLoss(t testing.TB, collectors int, phase time.Duration) faultFigures {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute+20*phase) // a loaded machine drains slowly
	defer cancel()
	cl := startJSCluster(t)
	admin := cl.connect(t, "admin")
	scfg := bus.DefaultStreamsConfig()
	scfg.Replicas = 3
	scfg.SamplesMaxBytes = 1 << 30 // the default 20 GiB, on each of three nodes, is more than a test machine's disk
	for attempt := 1; ; attempt++ {
		// Until the meta leader is elected a request goes unanswered: bound each try.
		actx, acancel := context.WithTimeout(ctx, 2*time.Second)
		err := bus.EnsureStreams(actx, admin, scfg)
		acancel()
		if err == nil {
			break
		} else if ctx.Err() != nil || attempt == 100 {
			t.Fatalf("streams: %v", err)
		}
		time.Sleep(100 * time.Millisecond) // the meta leader is being elected
	}
	s := chdbtest.Open(t)
	if _, err := store.Migrate(ctx, s, schemas.MigrationParams{RawTTLDays: 3650}); err != nil {
		t.Fatal(err)
	}

	// Two ingest processes sharing the durable consumer; one that returns is
	// started again, as its pod would be.
	var restarts atomic.Uint64
	icfg := ingest.DefaultConfig()
	icfg.BatchAge, icfg.AckWait = 200*time.Millisecond, 10*time.Second
	// Without a deadline, as in the service: each JetStream request then has the
	// client's own timeout and is retried; under the test's deadline a request lost
	// while a leader is elected would wait for all of it.
	ictx, stopIngest := context.WithCancel(context.Background())
	var iwg sync.WaitGroup
	for i := range 2 {
		js := cl.connect(t, fmt.Sprintf("ingest-%d", i))
		iwg.Go(func() {
			for ictx.Err() == nil {
				ing, err := ingest.New(icfg, js, s, ingest.WithLogger(benchLog()))
				if err != nil {
					t.Error(err)
					return
				}
				if err := ing.Run(ictx); err != nil && ictx.Err() == nil {
					restarts.Add(1)
				}
			}
		})
	}
	defer func() { stopIngest(); iwg.Wait() }()

	var stopped atomic.Bool
	ccfg := collector.DefaultConfig()
	ccfg.Cluster, ccfg.Interval, ccfg.PublishTimeout, ccfg.MaxBackoff = "fault", 50*time.Millisecond, 500*time.Millisecond, 500*time.Millisecond
	var cols []*collector.Collector
	cctx, stopCollectors := context.WithCancel(context.Background())
	var cwg sync.WaitGroup
	for i := range collectors {
		cfg := ccfg
		cfg.Node = fmt.Sprintf("gpu-%02d", i)
		cfg.Spool.Dir = filepath.Join(t.TempDir(), "spool")
		c, err := collector.New(cfg, stoppable{src: newDenseSource(), stopped: &stopped}, cl.connect(t, cfg.Node))
		if err != nil {
			t.Fatal(err)
		}
		cols = append(cols, c)
		cwg.Go(func() { _ = c.Run(cctx) })
	}
	defer func() { stopCollectors(); cwg.Wait() }()

	time.Sleep(phase)
	leader, err := streamLeader(ctx, admin, bus.StreamSamples)
	if err != nil {
		t.Fatal(err)
	}
	first := cl.index(leader)
	cl.kill(first)
	t.Logf("killed %s, the leader of %s", leader, bus.StreamSamples)
	time.Sleep(phase)
	second := (first + 1) % 3
	cl.kill(second)
	t.Logf("killed %s: one node of three left, no quorum", cl.opts[second].ServerName)
	time.Sleep(phase)
	cl.start(first)
	cl.start(second)
	t.Logf("restarted %s and %s", cl.opts[first].ServerName, cl.opts[second].ServerName)
	time.Sleep(phase)
	for i := range cl.nodes {
		cl.kill(i)
	}
	t.Log("killed every node: the collectors spool to disk")
	time.Sleep(phase)
	for i := range cl.nodes {
		cl.start(i)
	}
	back := time.Now()
	t.Log("restarted every node")
	time.Sleep(phase)
	stopped.Store(true)

	var f faultFigures
	lastLog := time.Now()
	for {
		var st collector.Stats
		for _, c := range cols {
			st.Add(c.Stats())
		}
		bctx, bcancel := context.WithTimeout(ctx, 3*time.Second) // a request lost in an election waits no longer
		backlog, berr := ingest.Backlog(bctx, admin, icfg.Durable)
		bcancel()
		gpu, gerr := countRows(ctx, s, "gpu_samples")
		proc, perr := countRows(ctx, s, "process_samples")
		if st.SpoolPending == 0 && berr == nil && gerr == nil && perr == nil && backlog["samples"] == 0 && gpu >= st.GPURows && proc >= st.ProcessRows {
			f.catchUp = time.Since(back)
			f.published, f.procPublished, f.spooled, f.batches = st.GPURows, st.ProcessRows, st.Spooled, st.Batches
			if st.SpoolDropped > 0 {
				t.Errorf("spools dropped %d messages", st.SpoolDropped)
			}
			break
		}
		if time.Since(lastLog) > 5*time.Second {
			lastLog = time.Now()
			t.Logf("catching up: spool %d, backlog %v (%v), stored %d of %d GPU rows (%v), ingest restarts %d",
				st.SpoolPending, backlog, berr, gpu, st.GPURows, gerr, restarts.Load())
		}
		if ctx.Err() != nil {
			t.Fatalf("not caught up: spool %d, backlog %v (%v), stored %d of %d GPU rows, %d of %d process rows",
				st.SpoolPending, backlog, berr, gpu, st.GPURows, proc, st.ProcessRows)
		}
		time.Sleep(50 * time.Millisecond)
	}
	res, err := s.Query(ctx, "SELECT count() AS n, count() - uniqExact(node, gpu_uuid, ts) AS dup FROM gpu_samples", nil)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := res.Int(0, "n")
	dup, _ := res.Int(0, "dup")
	f.stored, f.duplicates = uint64(n), uint64(dup)
	if dup > 0 {
		// Which rows: enough to tell a batch stored twice from two batches of one tick.
		res, err := s.Query(ctx, "SELECT node, toString(ts) AS t, count() AS c FROM gpu_samples GROUP BY node, gpu_uuid, ts HAVING c > 1 ORDER BY node, t LIMIT 8", nil)
		if err == nil {
			for i := range len(res.Rows) {
				node, _ := res.String(i, "node")
				ts, _ := res.String(i, "t")
				c, _ := res.Int(i, "c")
				t.Logf("duplicate: node %s ts %s stored %d times", node, ts, c)
			}
		}
	}
	if f.procStored, err = countRows(ctx, s, "process_samples"); err != nil {
		t.Fatal(err)
	}
	f.ingestRestarts = restarts.Load()
	for range 10 {
		sctx, scancel := context.WithTimeout(ctx, 3*time.Second)
		stream, err := admin.Stream(sctx, bus.StreamSamples)
		scancel()
		if err == nil {
			f.streamMsgs = stream.CachedInfo().State.Msgs
			break
		}
	}
	return f
}

func checkFigures(t testing.TB, f faultFigures) {
	t.Helper()
	if f.published == 0 || f.spooled == 0 {
		t.Errorf("published %d GPU rows, spooled %d messages: the run did not exercise the outage", f.published, f.spooled)
	}
	if f.stored-f.duplicates != f.published || f.procStored != f.procPublished+f.duplicates*benchProcs {
		t.Errorf("stored %d distinct GPU rows of %d published (%d in all), %d process rows of %d", f.stored-f.duplicates, f.published, f.stored, f.procStored, f.procPublished)
	}
	if f.duplicates != 0 {
		t.Errorf("%d duplicate GPU rows (%d batches handed over, %d messages in the samples stream)", f.duplicates, f.batches, f.streamMsgs)
	}
}

// TestNATSClusterNodeLoss is the short form of the fault scenario (runNodeLoss):
// stored == published and no duplicates after losing the stream leader, then the
// quorum, then getting both nodes back. BenchmarkNATSClusterNodeLoss is the long
// form, with the figures.
func TestNATSClusterNodeLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the cluster fault test takes about 15 s")
	}
	f := runNodeLoss(t, 3, 1500*time.Millisecond)
	checkFigures(t, f)
	t.Logf("published %d GPU rows (%d process rows), %d messages spooled, stored %d, %d duplicates, ingest restarts %d, caught up %s after the last node came back",
		f.published, f.procPublished, f.spooled, f.stored, f.duplicates, f.ingestRestarts, f.catchUp.Round(time.Millisecond))
}

// BenchmarkNATSClusterNodeLoss runs the fault scenario with 16 collectors and 10 s
// phases (GPUPOOL_BENCH_NATS_COLLECTORS and GPUPOOL_BENCH_NATS_PHASE change them) and
// reports the catch-up time and the rows moved.
func BenchmarkNATSClusterNodeLoss(b *testing.B) {
	collectors, phase := 16, 10*time.Second
	if n, err := strconv.Atoi(os.Getenv("GPUPOOL_BENCH_NATS_COLLECTORS")); err == nil && n > 0 {
		collectors = n
	}
	if d, err := time.ParseDuration(os.Getenv("GPUPOOL_BENCH_NATS_PHASE")); err == nil && d > 0 {
		phase = d
	}
	for b.Loop() {
		f := runNodeLoss(b, collectors, phase)
		checkFigures(b, f)
		b.ReportMetric(f.catchUp.Seconds(), "catchup_s")
		b.ReportMetric(float64(f.published), "gpu_rows")
		b.ReportMetric(float64(f.procPublished), "process_rows")
		b.ReportMetric(float64(f.spooled), "spooled_msgs")
		b.ReportMetric(float64(f.duplicates), "duplicates")
		b.ReportMetric(float64(f.ingestRestarts), "ingest_restarts")
	}
}
