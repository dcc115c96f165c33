package frag_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpupool/gpupool/scheduler/placement/frag"
	"github.com/gpupool/gpupool/scheduler/placement/frag/enginereplay"
)

// BenchmarkFragmentationTraceReplay is the replay with time on the real trace
// (both task files, DefaultReplayConfig: a tenth of the nodes, offered load
// 0.7, seed 1, every policy and queue) with the engine's rows (the scheduler's
// own placement, enginereplay.Configs), then the same with the tasks' CPU and
// memory dropped for every policy (ReplayConfig.GPUOnly), as the engine's rows
// always have them: it prints the tables of docs/fragmentation.md and reports,
// per row, the multi-GPU tasks never started and the utilisation. Its name
// matches make bench's FragmentationTrace pattern. Skips when ../shared is not
// beside the repository.
func BenchmarkFragmentationTraceReplay(b *testing.B) {
	dir := frag.RealTraceDir(b)
	for _, f := range []string{"pods.csv", "pods_gpushare40.csv"} {
		tr, err := frag.LoadTrace(dir, f)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(f, func(b *testing.B) {
			rc := frag.DefaultReplayConfig()
			gc := rc
			gc.GPUOnly = true
			var res, gpuOnly frag.ReplayResult
			for b.Loop() {
				if res, err = frag.Replay(tr, rc); err != nil {
					b.Fatal(err)
				}
				if gpuOnly, err = frag.Replay(tr, gc); err != nil {
					b.Fatal(err)
				}
				rows, err := enginereplay.Rows(frag.CutNodes(tr.Nodes, rc.Nodes), &res.Input, enginereplay.Configs(rc.Samples)...)
				if err != nil {
					b.Fatal(err)
				}
				res.Runs = append(res.Runs, rows...)
				gpuOnly.Runs = append(gpuOnly.Runs, rows...)
			}
			for _, r := range res.Runs {
				name := metricName(r)
				b.ReportMetric(float64(r.MultiNeverStarted), name+"-multi-never")
				b.ReportMetric(100*r.Utilisation, name+"-util%")
			}
			for _, r := range gpuOnly.Runs[:len(gpuOnly.Runs)-len(enginereplay.CardOrders)] {
				b.ReportMetric(float64(r.MultiNeverStarted), "gpu-only-"+metricName(r)+"-multi-never")
			}
			fmt.Printf("\n%s\n\n%s\n%s\n\n%s", res.Caption(f), res.Table(), gpuOnly.Caption(f), gpuOnly.Table())
		})
	}
}

// metricName is a row's policy and queue as a metric unit: no spaces or commas.
func metricName(r frag.ReplayRun) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(r.Policy, ",", "")), "-") + "/" + r.Queue
}
