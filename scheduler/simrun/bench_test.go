package simrun

import (
	"fmt"
	"testing"
)

// BenchmarkEnforcementWeek runs the demo fleet (2 clusters × 4 nodes × 8 GPUs,
// seed 1) for a simulated week, with enforcement off and then on (same seed, same
// job arrivals), at the demo's load and at a congested one, and reports
// utilisation, effective utilisation, idle-while-allocated and zombie-held GPU-hours,
// and the waiting jobs' p95 queue wait (requeued attempts apart) for each. Run it with -benchtime 1x.
func BenchmarkEnforcementWeek(b *testing.B) {
	for _, load := range []float64{0.75, 0.95} {
		b.Run(fmt.Sprintf("load=%.2f", load), func(b *testing.B) {
			var off, on Report
			for b.Loop() {
				cfg := DefaultConfig()
				cfg.Sim.Start, cfg.Sim.Load = start, load
				cfg.Enforce = false
				var err error
				if off, err = Run(b.Context(), cfg); err != nil {
					b.Fatal(err)
				}
				cfg.Enforce = true
				if on, err = Run(b.Context(), cfg); err != nil {
					b.Fatal(err)
				}
			}
			b.Logf("\n%s\n%s\nactions: %v", off, on, on.Actions)
			b.ReportMetric(100*off.Utilisation, "util_off_%")
			b.ReportMetric(100*on.Utilisation, "util_on_%")
			b.ReportMetric(100*off.Effective, "effective_off_%")
			b.ReportMetric(100*on.Effective, "effective_on_%")
			b.ReportMetric(off.IdleGPUh+off.ZombieGPUh, "wasted_off_GPUh")
			b.ReportMetric(on.IdleGPUh+on.ZombieGPUh, "wasted_on_GPUh")
			b.ReportMetric(off.WaitP95.Hours(), "wait_p95_off_h")
			b.ReportMetric(on.WaitP95.Hours(), "wait_p95_on_h")
			b.ReportMetric(float64(on.Actions["reclaim ok"]+on.Actions["kill ok"]), "actions")
		})
	}
}
