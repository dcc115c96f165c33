package bench

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gpupool/gpupool/internal/demo"
)

// simSeconds is the simulated time the run covered.
func (r *pipelineRun) simSeconds() float64 { return r.shape.sim.Seconds() }

// headroom is simulated seconds per wall second (≥ 1 keeps up with real time).
func (r *pipelineRun) headroom() float64 { return r.simSeconds() / r.wall.Seconds() }

// cpuPerSimSecond is the process's CPU seconds per simulated second.
func (r *pipelineRun) cpuPerSimSecond() float64 { return r.processCPU.Seconds() / r.simSeconds() }

func (r *pipelineRun) maxPass() time.Duration {
	if len(r.passes) == 0 {
		return 0
	}
	return slices.Max(r.passes)
}

// cpuRow is one line of the component table.
type cpuRow struct {
	name string
	ns   int64
	note string
}

// rows is the CPU table: each labelled component, the Go code under no label,
// and the native engine's own threads (the process's CPU less every Go-profiled
// sample).
func (r *pipelineRun) rows() []cpuRow {
	notes := map[string]string{
		demo.CompCollectors: "simulation + encoding + publishing",
		demo.CompNATS:       "embedded server + the bus connection's I/O",
		demo.CompIngest:     "decode, batch, insert calls (their C side on the calling thread)",
		demo.CompAnalyzer:   "pass code and its query calls on the calling thread",
		demo.CompScheduler:  "admission after ticks + policies after passes",
		demo.CompConsole:    "handlers, render (pages read once per simulated minute)",
		demo.CompStore:      "store-opened goroutines",
		"bench":             "the benchmark's page reader (HTTP client)",
		"":                  "unlabelled Go: GC workers, runtime, timers",
	}
	var out []cpuRow
	var goNS int64
	for _, k := range slices.Sorted(maps.Keys(r.cpu.byValue)) {
		name := k
		if k == "" {
			name = "go (unlabelled)"
		}
		out = append(out, cpuRow{name, r.cpu.byValue[k], notes[k]})
		goNS += r.cpu.byValue[k]
	}
	slices.SortFunc(out, func(a, b cpuRow) int { return cmp.Compare(b.ns, a.ns) })
	engine := r.processCPU.Nanoseconds() - goNS
	out = append(out, cpuRow{"chdb engine threads", engine,
		fmt.Sprintf("process CPU − Go-profiled CPU (the profile's external-code samples: %.1f s)", time.Duration(r.cpu.external).Seconds())})
	return out
}

// print writes the run's table.
func (r *pipelineRun) print(w io.Writer) {
	sh := r.shape
	pace := "as fast as it can"
	if sh.speed > 0 {
		pace = fmt.Sprintf("paced at %g× real time", sh.speed)
	}
	fmt.Fprintf(w, "\nPipeline: %d clusters × %d nodes × %d GPUs = %d GPUs, tick 1 s, %s simulated %s, analyzer every %s, policies on, console serving\n",
		sh.clusters, sh.nodes, sh.gpus, r.gpus, sh.sim, pace, sh.analyzeEvery)
	fmt.Fprintf(w, "rows published %d (%.0f per simulated second); wall %s; load average %.1f at start, %.1f at end, %.1f mean (2 cores)\n",
		r.published, float64(r.published)/r.simSeconds(), r.wall.Round(time.Second), r.loadStart, r.loadEnd, r.meanLoad())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "component\tCPU s per sim s\tshare\tCPU s\twhat")
	for _, row := range r.rows() {
		s := time.Duration(row.ns).Seconds()
		fmt.Fprintf(tw, "%s\t%.3f\t%.1f%%\t%.1f\t%s\n", row.name, s/r.simSeconds(), 100*s/r.processCPU.Seconds(), s, row.note)
	}
	fmt.Fprintf(tw, "process\t%.3f\t100%%\t%.1f\tgetrusage\n", r.cpuPerSimSecond(), r.processCPU.Seconds())
	tw.Flush()
	rssAt := r.peakSample()
	fmt.Fprintf(w, "headroom: %.2f simulated s per wall s (measured, load %.1f); %.2f if the process had both cores to itself (2 / CPU s per sim s)\n",
		r.headroom(), r.meanLoad(), 2/r.cpuPerSimSecond())
	fmt.Fprintf(w, "ingest lag (publish → stored, wall): p50 %s, p99 %s\n", r.lagP50.Round(time.Millisecond), r.lagP99.Round(time.Millisecond))
	fmt.Fprintf(w, "peak RSS %.0f MiB (VmHWM); at the highest sampled RSS (%.0f MiB) the Go heap's objects were %.0f MiB and the Go runtime's memory %.0f MiB\n",
		mib(r.peakRSS), mib(rssAt.rssBytes), mib(rssAt.heapBytes), mib(rssAt.goBytes))
	var ps []string
	for _, p := range r.passes {
		ps = append(ps, fmt.Sprintf("%.1f", p.Seconds()))
	}
	fmt.Fprintf(w, "analyzer passes (wall s each): %s; scheduler work in all %.1f s\n", strings.Join(ps, ", "), r.schedPasses.Seconds())
	for _, p := range consolePages {
		fmt.Fprintf(w, "console %-11s median %4d ms at the end (5 reads), median %4d ms max %4d ms while running (%d reads)\n", p,
			median(r.pages[p]).Milliseconds(), median(r.pagesDuring[p]).Milliseconds(), maxDur(r.pagesDuring[p]).Milliseconds(), len(r.pagesDuring[p]))
	}
	for _, comp := range []string{demo.CompIngest, demo.CompAnalyzer, demo.CompConsole} {
		r.printTopFrames(w, comp, 4)
	}
}

// printTopFrames lists where a component's Go-side CPU went, by the module's
// function nearest the leaf.
func (r *pipelineRun) printTopFrames(w io.Writer, comp string, n int) {
	fr := r.cpu.frames[comp]
	names := slices.SortedFunc(maps.Keys(fr), func(a, b string) int { return cmp.Compare(fr[b], fr[a]) })
	if len(names) > n {
		names = names[:n]
	}
	var parts []string
	for _, f := range names {
		parts = append(parts, fmt.Sprintf("%s %.1f s", strings.TrimPrefix(f, "github.com/gpupool/gpupool/"), time.Duration(fr[f]).Seconds()))
	}
	fmt.Fprintf(w, "%s's CPU by gpupool function nearest the leaf: %s\n", comp, strings.Join(parts, "; "))
}

func (r *pipelineRun) meanLoad() float64 {
	if len(r.samples) == 0 {
		return 0
	}
	var s float64
	for _, p := range r.samples {
		s += p.load1
	}
	return s / float64(len(r.samples))
}

func (r *pipelineRun) peakSample() procSample {
	var best procSample
	for _, p := range r.samples {
		if p.rssBytes > best.rssBytes {
			best = p
		}
	}
	return best
}

func maxDur(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return slices.Max(ds)
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
