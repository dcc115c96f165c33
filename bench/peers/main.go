// Command peers loads a simulated trace into Prometheus TSDB (what dcgm-exporter
// users store GPU telemetry in) and prints what it costs: bytes on disk per metric
// value (compacted blocks, and with the write-ahead log), the loader's peak
// resident memory, load time, and seven queries (queries.go) asked of both, answers
// compared, with which store is ahead on each.
// gpupool's side of the comparison is BenchmarkBytesPerValue and
// BenchmarkIngestBacklogRSS in bench/ (docs/measurements.md).
//
// It is a module of its own so that gpupool does not depend on Prometheus:
//
//	cd bench/peers && go run . -gpus 1000 -ticks 360 -runs 3
//
// With -runs N it loads the same trace N times into each (a fresh TSDB directory,
// a fresh chDB database each time, alternating) and prints each figure as the range
// over the runs: the machine's noise is in the ranges, not hidden by one run.
package main

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/gpupool/gpupool/collector/sim"
	"github.com/gpupool/gpupool/scheduler/placement/simcli"
	"github.com/gpupool/gpupool/schemas"
)

var cmd = simcli.Cmd{Name: "peers"}

func main() {
	gpus := flag.Int("gpus", 1000, "GPUs in the simulated fleet (rounded to whole 8-GPU nodes)")
	ticks := flag.Int("ticks", 360, "samples per GPU (10 s apart)")
	dir := flag.String("dir", "", "TSDB directory (default: a temporary one, removed)")
	chdbDir := flag.String("chdb-dir", "", "chDB data directory (default: a temporary one, removed)")
	lib := flag.String("chdb-lib", os.Getenv("GPUPOOL_CHDB_LIB"), "libchdb.so (default: GPUPOOL_CHDB_LIB, else make deps' cache)")
	runs := flag.Int("runs", 1, "loads of the trace into each store; figures are printed as ranges over them")
	rss := flag.Bool("rss", true, "also measure peak RSS: gpupool ingest (its default configuration; embedded engine, and against a ClickHouse endpoint) draining the trace from NATS, and Prometheus TSDB loading it, each a process of its own")
	root := flag.String("root", "../..", "gpupool's module, to build cmd/gpupool from (-rss)")
	bins := flag.String("gpupool", "", "gpupool binaries to run instead of building one, comma-separated: each is measured, alternating (-rss; comparing two builds)")
	load := flag.Bool("load", true, "load the trace into both stores in this process: bytes per value, load time, queries")
	child := flag.String("prom-child", "", "internal: load the trace into a TSDB at this directory and exit (-rss's Prometheus process)")
	flag.Parse()
	if *child != "" {
		if err := promChild(*child, *gpus, *ticks); err != nil {
			cmd.Fail(fmt.Errorf("prometheus child: %w", err))
		}
		return
	}
	if *runs < 1 {
		cmd.Usage(fmt.Errorf("-runs %d: want at least 1", *runs))
	}
	if *rss {
		if err := runRSS(*root, *bins, *gpus, *ticks, *runs); err != nil {
			cmd.Fail(err)
		}
	}
	if !*load {
		return
	}
	if err := run(*gpus, *ticks, *runs, *dir, *chdbDir, *lib); err != nil {
		cmd.Fail(err)
	}
}

// gpuSeries names the 15 measurements of a GPU sample as dcgm-exporter does.
var gpuSeries = []string{
	"DCGM_FI_DEV_FB_TOTAL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_SM_ACTIVE",
	"DCGM_FI_PROF_SM_OCCUPANCY", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE", "DCGM_FI_DEV_GPU_UTIL",
	"DCGM_FI_PROF_PCIE_TX_BYTES", "DCGM_FI_PROF_PCIE_RX_BYTES", "DCGM_FI_DEV_POWER_USAGE",
	"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_CLOCK_EVENT_REASONS",
}

func gpuValues(g *schemas.GPUSample) []float64 {
	return []float64{
		float64(g.FBTotalMiB), float64(g.FBUsedMiB), float64(g.GrEngineActive), float64(g.SMActive),
		float64(g.SMOccupancy), float64(g.TensorActive), float64(g.DRAMActive), float64(g.GPUUtil),
		float64(g.PCIeTxBytesPerS), float64(g.PCIeRxBytesPerS), float64(g.PowerW),
		float64(g.EnergyMilliJ), float64(g.TempC), float64(g.XID), float64(g.ClockEventReasons),
	}
}

var procSeries = []string{"gpupool_process_fb_used_mib", "gpupool_process_sm_util", "gpupool_process_mem_util"}

type loader struct {
	app    storage.Appender
	refs   map[string]storage.SeriesRef
	values int
}

func (l *loader) add(name string, lbls []string, ts int64, v float64) error {
	if math.IsNaN(v) { // not reported: no sample, as an exporter would skip it
		return nil
	}
	key := name + "\xff" + strings.Join(lbls, "\xff")
	ref, err := l.app.Append(l.refs[key], labels.FromStrings(append([]string{"__name__", name}, lbls...)...), ts, v)
	if err != nil {
		return fmt.Errorf("append %s: %w", name, err)
	}
	l.refs[key] = ref
	l.values++
	return nil
}

// addBatch appends a node's sample as dcgm-exporter's series (and the process
// series gpupool's collector would export).
func (l *loader) addBatch(b *schemas.SampleBatch) error {
	for i := range b.GPUs {
		g := &b.GPUs[i]
		lbls := []string{"cluster", b.Cluster, "Hostname", b.Node, "UUID", g.GPUUUID, "modelName", g.Model, "GPU_I_PROFILE", g.MIGProfile}
		for j, v := range gpuValues(g) {
			if err := l.add(gpuSeries[j], lbls, g.TimeMs, v); err != nil {
				return err
			}
		}
	}
	for i := range b.Processes {
		p := &b.Processes[i]
		lbls := []string{"cluster", b.Cluster, "Hostname", b.Node, "UUID", p.GPUUUID, "pid", strconv.FormatUint(uint64(p.PID), 10), "job", p.Job}
		for j, v := range []float64{float64(p.FBUsedMiB), float64(p.SMUtil), float64(p.MemUtil)} {
			if err := l.add(procSeries[j], lbls, p.TimeMs, v); err != nil {
				return err
			}
		}
	}
	return nil
}

func run(gpus, ticks, runs int, dir, chdbDir, libPath string) error {
	if dir == "" {
		d, err := os.MkdirTemp("", "peers-tsdb")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	if chdbDir == "" {
		d, err := os.MkdirTemp("", "peers-chdb")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		chdbDir = d
	}
	cfg, err := fleetConfig(gpus)
	if err != nil {
		return err
	}
	trace, err := simTrace(cfg, ticks)
	if err != nil {
		return err
	}
	job, end := busiestJob(trace)
	var proms []*promResult
	var ours []*ourResult
	for i := range runs {
		// One TSDB directory per run; one chDB database per run on the one data
		// path (the engine holds one path per process).
		prom, err := loadPrometheus(filepath.Join(dir, strconv.Itoa(i)), cfg, trace, job, end)
		if err != nil {
			return err
		}
		our, err := loadGpupool(chdbDir, fmt.Sprintf("peers_%d", i), libPath, cfg, trace, job, end)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "run %d of %d: Prometheus TSDB loaded in %v, gpupool in %v\n", i+1, runs, prom.load.Round(time.Millisecond), our.load.Round(time.Millisecond))
		proms, ours = append(proms, prom), append(ours, our)
	}
	p0, o0 := proms[0], ours[0]
	fmt.Printf("trace: %d GPUs x %d ticks of %v: %d GPU rows, %d process rows, %d metric values; %d run(s) each; each query's time the median of %d after a warm-up, per run\n",
		trace.gpus, ticks, cfg.Tick, trace.gpuRows, trace.procRows, p0.values, runs, queryReps)
	fmt.Println("| figure | Prometheus TSDB | gpupool (chDB) | ahead |")
	fmt.Println("| --- | --- | --- | --- |")
	promBlocks := func(r *promResult) float64 { return float64(r.blockBytes) / float64(r.values) }
	ourAll := func(r *ourResult) float64 { return float64(r.allBytes) / float64(r.values) }
	fmt.Printf("| bytes per metric value on disk | %s (blocks), %s (head and WAL) | %s (raw tables and rollups, after merges), %s (raw tables); the last hours per GPU and minute, gpu_state_minute, %s MB more | %s |\n",
		span(proms, promBlocks, "%.2f"),
		span(proms, func(r *promResult) float64 { return float64(r.walBytes) / float64(r.values) }, "%.2f"),
		span(ours, ourAll, "%.2f"),
		span(ours, func(r *ourResult) float64 { return float64(r.rawBytes) / float64(r.values) }, "%.2f"),
		span(ours, func(r *ourResult) float64 { return float64(r.recentBytes) / 1e6 }, "%.1f"),
		ahead(proms, ours, promBlocks, ourAll))
	promLoad := func(r *promResult) float64 { return r.load.Seconds() }
	ourLoad := func(r *ourResult) float64 { return r.load.Seconds() }
	fmt.Printf("| load time, s | %s | %s | %s |\n", span(proms, promLoad, "%.1f"), span(ours, ourLoad, "%.1f"), ahead(proms, ours, promLoad, ourLoad))
	for _, q := range queries {
		n := q.name
		pa, oa := p0.queries[n].ans, o0.queries[n].ans
		same := "equal"
		if err := compare(pa, oa, 0.01); err != nil {
			same = "DIFFERENT: " + err.Error()
		}
		pt := func(r *promResult) float64 { return ms(r.queries[n].took) }
		ot := func(r *ourResult) float64 { return ms(r.queries[n].took) }
		raw := ""
		if strings.Contains(q.ours, "rollup") || !strings.Contains(q.ours, "raw") {
			raw = fmt.Sprintf("; raw tables: %s", span(ours, func(r *ourResult) float64 { return ms(r.queries[n+" (raw)"].took) }, "%.1f"))
		}
		fmt.Printf("| %s, ms (answers %s, %d values) | %s (%s) | %s (%s%s) | %s |\n", n, same, len(pa),
			span(proms, pt, "%.1f"), q.prom, span(ours, ot, "%.1f"), q.ours, raw, ahead(proms, ours, pt, ot))
	}
	fmt.Printf("| peak RSS of this process, both loads | %.0f MiB | | |\n", float64(vmHWM())/1024)
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// ahead says which store is ahead on a figure where less is better, by the
// median over the runs, and by how much; "(ranges overlap)" when a run of the
// one behind did as well as a run of the one ahead.
func ahead(proms []*promResult, ours []*ourResult, pf func(*promResult) float64, of func(*ourResult) float64) string {
	pv, ov := values(proms, pf), values(ours, of)
	p, o := pv[len(pv)/2], ov[len(ov)/2]
	who, ratio, overlap := "gpupool", p/o, pv[0] <= ov[len(ov)-1]
	if o > p {
		who, ratio, overlap = "Prometheus", o/p, ov[0] <= pv[len(pv)-1]
	}
	s := fmt.Sprintf("%s, %.1f×", who, ratio)
	if overlap {
		s += " (ranges overlap)"
	}
	return s
}

// values is f over rs, sorted.
func values[R any](rs []R, f func(R) float64) []float64 {
	var v []float64
	for _, r := range rs {
		v = append(v, f(r))
	}
	slices.Sort(v)
	return v
}

// busiestJob is the job with the most process samples in the trace (the
// timeline query's), and the trace's last sample time in ms.
func busiestJob(tr *trace) (string, int64) {
	n := map[string]int{}
	var end int64
	for _, b := range tr.batches {
		for i := range b.Processes {
			if j := b.Processes[i].Job; j != "" {
				n[j]++
			}
		}
		for i := range b.GPUs {
			end = max(end, b.GPUs[i].TimeMs)
		}
	}
	best := ""
	for j, c := range n {
		if c > n[best] || (c == n[best] && j < best) {
			best = j
		}
	}
	return best, end
}

// span formats the range of f over rs ("lo–hi", or one figure when they agree at
// the format's precision).
func span[R any](rs []R, f func(R) float64, format string) string {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range rs {
		v := f(r)
		lo, hi = min(lo, v), max(hi, v)
	}
	a, b := fmt.Sprintf(format, lo), fmt.Sprintf(format, hi)
	if a == b {
		return a
	}
	return a + "–" + b
}

// fleetConfig sizes the simulated fleet to about gpus GPU units (whole GPUs and
// MIG instances).
func fleetConfig(gpus int) (sim.Config, error) {
	cfg := sim.DefaultConfig()
	cfg.Clusters = 1
	// The trace is the last hour (at the default 360 ticks): a fleet's now, which
	// gpu_state_minute keeps (three hours by the wall clock).
	cfg.Start = time.Now().UTC().Truncate(time.Hour).Add(-time.Hour)
	cfg.NodesPerCluster = max(1, gpus/cfg.GPUsPerNode)
	f, err := sim.New(cfg)
	if err != nil {
		return cfg, err
	}
	cfg.NodesPerCluster = max(1, cfg.NodesPerCluster*gpus/f.GPUCount())
	return cfg, nil
}

type trace struct {
	gpus              int
	batches           []*schemas.SampleBatch
	gpuRows, procRows int
}

func simTrace(cfg sim.Config, ticks int) (*trace, error) {
	fleet, err := sim.New(cfg)
	if err != nil {
		return nil, err
	}
	tr := &trace{gpus: fleet.GPUCount()}
	for k := 0; k < ticks; k++ {
		at := cfg.Start.Add(time.Duration(k) * cfg.Tick)
		fleet.Advance(at)
		for _, n := range fleet.Nodes() {
			b := &schemas.SampleBatch{Cluster: n.Cluster(), Node: n.Name()}
			if err := n.Sample(context.Background(), at, b); err != nil {
				return nil, err
			}
			tr.batches = append(tr.batches, b)
			tr.gpuRows += len(b.GPUs)
			tr.procRows += len(b.Processes)
		}
	}
	return tr, nil
}

type promResult struct {
	values               int
	walBytes, blockBytes int64
	load                 time.Duration
	queries              queryTimes
}

func loadPrometheus(dir string, cfg sim.Config, tr *trace, job string, end int64) (*promResult, error) {
	opts := tsdb.DefaultOptions()
	db, err := tsdb.Open(dir, nil, nil, opts, nil)
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	l := &loader{refs: map[string]storage.SeriesRef{}}
	t0 := time.Now()
	perTick := len(tr.batches) * 0
	if n := len(tr.batches); n > 0 {
		perTick = max(1, n/max(1, countTicks(tr)))
	}
	for start := 0; start < len(tr.batches); start += perTick {
		l.app = db.Appender(ctx)
		for _, b := range tr.batches[start:min(len(tr.batches), start+perTick)] {
			if err := l.addBatch(b); err != nil {
				return nil, err
			}
		}
		if err := l.app.Commit(); err != nil {
			return nil, err
		}
	}
	load := time.Since(t0)
	walBytes := dirBytes(dir)
	head := db.Head()
	if err := db.CompactHead(tsdb.NewRangeHead(head, head.MinTime(), head.MaxTime())); err != nil {
		return nil, fmt.Errorf("compact head: %w", err)
	}
	blockBytes := int64(0)
	for _, b := range db.Blocks() {
		blockBytes += dirBytes(b.Dir())
	}

	qt, err := promQueries(db, cfg.Tick, job, end)
	if err != nil {
		return nil, err
	}
	if err := db.Close(); err != nil {
		return nil, err
	}
	return &promResult{values: l.values, walBytes: walBytes, blockBytes: blockBytes, load: load, queries: qt}, nil
}

// countTicks is the number of distinct sample times in the trace.
func countTicks(tr *trace) int {
	seen := map[int64]struct{}{}
	for _, b := range tr.batches {
		if len(b.GPUs) > 0 {
			seen[b.GPUs[0].TimeMs] = struct{}{}
		}
	}
	return len(seen)
}

func dirBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// vmHWM is this process's peak resident set size in KiB.
func vmHWM() uint64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			v, _ := strconv.ParseUint(f[1], 10, 64)
			return v
		}
	}
	return 0
}
