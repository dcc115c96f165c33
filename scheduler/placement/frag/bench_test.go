package frag

import (
	"fmt"
	"slices"
	"testing"
)

// BenchmarkFragmentationTrace is the FGD paper's experiment on the real trace
// (both task files, seeds 1–3, every policy): it logs the markdown table of
// docs/fragmentation.md (printed, not logged: go test cuts long benchmark logs) and reports, at 100 % demand, each policy's unallocated
// GPU capacity as a ratio to FGD's measured in the same run (below 1: fewer GPUs
// left unallocated than FGD). Skips when ../shared is not beside the repository.
func BenchmarkFragmentationTrace(b *testing.B) {
	dir := realTraceDir(b)
	cfg := DefaultConfig()
	cfg.Seeds = []uint64{1, 2, 3}
	for _, f := range []string{"pods.csv", "pods_gpushare40.csv"} {
		tr, err := LoadTrace(dir, f)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(f, func(b *testing.B) {
			var res Result
			for b.Loop() {
				if res, err = Run(tr, cfg); err != nil {
					b.Fatal(err)
				}
			}
			full := slices.IndexFunc(res.Levels, func(l float64) bool { return l >= 1-1e-9 })
			for _, p := range cfg.Policies {
				b.ReportMetric(res.mean(p, full)/res.mean(FGD, full), p+"/fgd")
			}
			fmt.Printf("\n%s: %d nodes, %d GPUs; seeds 1,2,3; GPU capacity left unallocated (%%, mean over seeds)\n\n%s", f, res.Nodes, res.GPUs, res.Table())
		})
	}
}

// BenchmarkChoose is one placement decision of each policy on the real trace's
// cluster, half full, in decisions per second.
func BenchmarkChoose(b *testing.B) {
	tr, err := LoadTrace(realTraceDir(b), "pods.csv")
	if err != nil {
		b.Fatal(err)
	}
	w := WorkloadOf(tr.Tasks)
	for _, name := range PolicyNames {
		b.Run(name, func(b *testing.B) {
			pol, _ := NewPolicy(name, w, 1)
			c := NewCluster(tr.Nodes)
			for i := 0; c.FreeMilli() > c.TotalGPUs()*MilliGPU/2; i++ {
				s := ShapeOf(tr.Tasks[i%len(tr.Tasks)])
				if p, ok := pol.Choose(c, s); ok {
					_ = c.Place(s, p)
				}
			}
			i := 0
			for b.Loop() {
				pol.Choose(c, ShapeOf(tr.Tasks[i%len(tr.Tasks)]))
				i++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
		})
	}
}
