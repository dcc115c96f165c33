package bench

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpupool/gpupool/internal/config"
	"github.com/gpupool/gpupool/internal/demo"
	"github.com/gpupool/gpupool/reports"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

// pipelineShape is one fleet the pipeline benchmark runs.
type pipelineShape struct {
	clusters, nodes, gpus int
	sim, analyzeEvery     time.Duration
	speed                 float64 // simulated s per wall s; 0: as fast as it can
}

// envSpeed is the pace, from $GPUPOOL_BENCH_PIPELINE_SPEED (simulated seconds
// per wall second; 1 is real time) when set, else 0: as fast as it can.
func envSpeed(b *testing.B) float64 {
	v := os.Getenv("GPUPOOL_BENCH_PIPELINE_SPEED")
	if v == "" {
		return 0
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 {
		b.Fatalf("GPUPOOL_BENCH_PIPELINE_SPEED=%q: want simulated seconds per wall second (1: real time; 0: as fast as it can)", v)
	}
	return f
}

// envSim is the simulated window, from $GPUPOOL_BENCH_PIPELINE_SIM (a Go
// duration) when set, else def.
func envSim(b *testing.B, def time.Duration) time.Duration {
	v := os.Getenv("GPUPOOL_BENCH_PIPELINE_SIM")
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < time.Minute {
		b.Fatalf("GPUPOOL_BENCH_PIPELINE_SIM=%q: want a duration of at least 1m (e.g. 15m, 1h)", v)
	}
	return d
}

// BenchmarkPipeline10k runs the whole pipeline in one process (gpupool demo's
// harness: simulated collectors → embedded NATS → ingest → chDB → analyzer
// passes → scheduler, console serving) for 10,000 GPUs (2 clusters × 625
// nodes × 8) sampled every simulated second, as fast as it can, one run with
// the demo's policies on, and prints where the CPU went per simulated second,
// the headroom over real time, ingest lag, peak RSS, analyzer pass times and
// console page times. 10 simulated minutes unless $GPUPOOL_BENCH_PIPELINE_SIM
// says otherwise (docs/measurements.md#the-whole-pipeline-at-10000-gpus).
func BenchmarkPipeline10k(b *testing.B) {
	benchPipeline(b, pipelineShape{clusters: 2, nodes: 625, gpus: 8, sim: envSim(b, 10*time.Minute), analyzeEvery: 5 * time.Minute, speed: envSpeed(b)})
}

// BenchmarkPipeline1k is BenchmarkPipeline10k for 1,008 GPUs (2 × 63 × 8), a
// simulated hour unless $GPUPOOL_BENCH_PIPELINE_SIM says otherwise.
func BenchmarkPipeline1k(b *testing.B) {
	benchPipeline(b, pipelineShape{clusters: 2, nodes: 63, gpus: 8, sim: envSim(b, time.Hour), analyzeEvery: 5 * time.Minute, speed: envSpeed(b)})
}

func benchPipeline(b *testing.B, sh pipelineShape) {
	for b.Loop() {
		r := runPipeline(b, sh)
		r.print(os.Stdout)
		b.ReportMetric(r.headroom(), "sim_s/wall_s")
		b.ReportMetric(r.cpuPerSimSecond(), "cpu_s/sim_s")
		b.ReportMetric(float64(r.peakRSS)/(1<<20), "peak_rss_MiB")
		b.ReportMetric(r.lagP99.Seconds(), "ingest_lag_p99_s")
		b.ReportMetric(r.maxPass().Seconds(), "analyzer_pass_max_s")
	}
}

// pipelineRun is what one run measured.
type pipelineRun struct {
	shape         pipelineShape
	gpus          int // GPU rows per tick (MIG slices and time-sliced GPUs apart)
	wall          time.Duration
	processCPU    time.Duration
	cpu           cpuByLabel
	samples       []procSample
	peakRSS       uint64
	lagP50        time.Duration
	lagP99        time.Duration
	passes        []time.Duration // the analyzer's, each
	schedPasses   time.Duration   // the scheduler's work in all (admission and policies)
	pages         map[string][]time.Duration
	pagesDuring   map[string][]time.Duration
	published     uint64
	loadStart     float64
	loadEnd       float64
	summaryOutput string
}

// runPipeline runs the demo once with hooks that label each component's
// goroutines, profile the CPU from the fleet's first tick to the last analyzer
// pass, sample the process, and fetch the console's pages at the end.
func runPipeline(b *testing.B, sh pipelineShape) *pipelineRun {
	c := config.Default()
	c.DataDir = b.TempDir()
	c.LogLevel = "warn"
	c.Store.CHDB.LibPath = chdbtest.LibPath()
	// A live fleet's window: the simulation ends when the run starts (the demo's
	// default ends at midnight), so the console reads the samples of now as it
	// does in production (gpu_state_recent).
	demo.Flags{Duration: sh.sim, Speed: sh.speed, Clusters: sh.clusters, Nodes: sh.nodes, GPUs: sh.gpus, Tick: time.Second,
		AnalyzeEvery: sh.analyzeEvery, Start: time.Now().UTC().Truncate(time.Minute).Add(-sh.sim)}.Apply(&c)
	if err := c.Finish(""); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	r := &pipelineRun{shape: sh, gpus: sh.clusters * sh.nodes * sh.gpus, pages: map[string][]time.Duration{}, pagesDuring: map[string][]time.Duration{}}
	m := &measure{r: r, cancel: cancel}
	var out bytes.Buffer
	d, err := demo.New(c, demo.WithBaseline(false), demo.WithEnforcement(true), demo.WithPlacement(true),
		demo.WithConsole("127.0.0.1:0"), demo.WithOutput(&out), demo.WithProgress(reports.NewProgressLines(os.Stderr, 30*time.Second)),
		demo.WithHooks(demo.Hooks{Label: m.label, Started: m.started, Simulated: m.simulated, Done: m.done}))
	if err != nil {
		b.Fatal(err)
	}
	if err := d.Run(ctx); err != nil && ctx.Err() == nil {
		b.Fatalf("demo: %v\n%s", err, out.String())
	}
	if m.err != nil {
		b.Fatal(m.err)
	}
	r.summaryOutput = out.String()
	return r
}

// measure is the hooks' state.
type measure struct {
	r      *pipelineRun
	cancel context.CancelFunc
	err    error

	d        *demo.Demo
	running  atomic.Bool
	prof     bytes.Buffer
	cpu0     time.Duration
	wall0    time.Time
	samp     *sampler
	mu       sync.Mutex
	stopLoad chan struct{}
	loadDone chan struct{}
}

// label runs f under the pprof label component=name and times the passes.
func (m *measure) label(ctx context.Context, name string, f func(context.Context)) {
	start := time.Now()
	pprof.Do(ctx, pprof.Labels("component", name), f)
	if !m.running.Load() {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch name {
	case demo.CompAnalyzer:
		m.r.passes = append(m.r.passes, time.Since(start))
	case demo.CompScheduler:
		m.r.schedPasses += time.Since(start)
	}
}

// started begins the measured window: the fleet is about to run.
func (m *measure) started(d *demo.Demo) {
	m.d = d
	m.r.loadStart = loadAvg()
	if err := pprof.StartCPUProfile(&m.prof); err != nil {
		m.err = fmt.Errorf("pipeline: cpu profile: %w", err)
	}
	m.samp = startSampler(100*time.Millisecond, d.Counts)
	m.cpu0, m.wall0 = processCPU(), time.Now()
	m.running.Store(true)
	m.stopLoad, m.loadDone = make(chan struct{}), make(chan struct{})
	go pprof.Do(context.Background(), pprof.Labels("component", "bench"), func(context.Context) { m.readPages() })
}

// readPages is a user with the console open: the fleet, jobs and chargeback
// pages, once per simulated minute, until the fleet stops.
func (m *measure) readPages() {
	defer close(m.loadDone)
	last := m.d.SimNow()
	for {
		select {
		case <-m.stopLoad:
			return
		case <-time.After(200 * time.Millisecond):
		}
		if now := m.d.SimNow(); now.Sub(last) >= time.Minute {
			last = now
			for _, p := range consolePages {
				took, err := m.fetch(p)
				m.mu.Lock()
				if err != nil && m.err == nil {
					m.err = err
				}
				m.r.pagesDuring[p] = append(m.r.pagesDuring[p], took)
				m.mu.Unlock()
			}
		}
	}
}

// simulated ends the measured window: the fleet ran, ingest caught up and the
// last pass ran.
func (m *measure) simulated() {
	m.running.Store(false)
	r := m.r
	r.wall = time.Since(m.wall0)
	r.processCPU = processCPU() - m.cpu0
	pprof.StopCPUProfile()
	close(m.stopLoad)
	<-m.loadDone
	r.samples = m.samp.stop()
	r.peakRSS = peakRSSBytes()
	r.loadEnd = loadAvg()
	r.published, _ = m.d.Counts()
	lags := ingestLag(r.samples, 0.5, 0.99)
	r.lagP50, r.lagP99 = lags[0], lags[1]
	var err error
	if r.cpu, err = decodeCPUProfile(m.prof.Bytes(), "component", natsLabels, "github.com/gpupool/gpupool/"); err != nil && m.err == nil {
		m.err = err
	}
	if path := os.Getenv("GPUPOOL_BENCH_PIPELINE_HEAPPROF"); path != "" {
		m.writeHeapProfile(path)
	}
	if path := os.Getenv("GPUPOOL_BENCH_PIPELINE_PROFILE"); path != "" {
		if err := os.WriteFile(path, m.prof.Bytes(), 0o600); err != nil && m.err == nil {
			m.err = fmt.Errorf("pipeline: write the CPU profile: %w", err)
		}
	}
}

// writeHeapProfile writes the Go heap's profile at the end of the measured
// window (what holds the heap while the fleet's data is in flight).
func (m *measure) writeHeapProfile(path string) {
	f, err := os.Create(path)
	if err == nil {
		err = pprof.Lookup("heap").WriteTo(f, 0)
		err = cmp.Or(err, f.Close())
	}
	if err != nil && m.err == nil {
		m.err = fmt.Errorf("pipeline: write the heap profile: %w", err)
	}
}

// natsLabels are the labels nats-server sets on its goroutines in place of
// the component label they were started under.
var natsLabels = map[string]string{"account": demo.CompNATS, "stream": demo.CompNATS, "consumer": demo.CompNATS, "type": demo.CompNATS}

// consolePages are the pages read as admin, at the end and while the fleet runs.
var consolePages = []string{"/fleet", "/jobs", "/chargeback"}

// done reads each page five times with the run's data complete, then ends the
// demo.
func (m *measure) done() {
	defer m.cancel()
	for range 5 {
		for _, p := range consolePages {
			took, err := m.fetch(p)
			if err != nil {
				m.err = err
				return
			}
			m.r.pages[p] = append(m.r.pages[p], took)
		}
	}
}

// fetch reads a console page as admin and says how long it took.
func (m *measure) fetch(page string) (time.Duration, error) {
	url, token := m.d.Console()
	req, err := http.NewRequest(http.MethodGet, url+page, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	start := time.Now()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("pipeline: GET %s: %w", page, err)
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	took := time.Since(start)
	if err != nil || res.StatusCode != http.StatusOK {
		return took, fmt.Errorf("pipeline: GET %s: %s %v: %.300s", page, res.Status, err, strings.TrimSpace(string(body)))
	}
	return took, nil
}
