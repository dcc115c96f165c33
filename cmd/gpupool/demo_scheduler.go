package main

import (
	"context"
	"fmt"
	"time"

	"github.com/gpupool/gpupool/collector/sim"
	"github.com/gpupool/gpupool/scheduler/simrun"
	"github.com/gpupool/gpupool/store"
)

// schedulerEffect runs the demo's fleet (same configuration, seed and span) twice
// more in simulation, its jobs admitted by gpupool's scheduler: once with the
// policies off and once with them on (idle dev jobs notified after 30 min and
// reclaimed 15 min later, zombies killed after 10 min). The pipeline run above
// does not enforce anything, so this is what enforcement would have changed.
func schedulerEffect(ctx context.Context, fleet sim.Config, span time.Duration) (demoSection, error) {
	res := &store.Result{Columns: []store.ColumnMeta{
		{Name: "enforcement", Type: "String"},
		{Name: "utilisation_pct", Type: "Float64"}, {Name: "effective_pct", Type: "Float64"},
		{Name: "idle_gpu_hours", Type: "Float64"}, {Name: "zombie_gpu_hours", Type: "Float64"},
		{Name: "wait_p50_min", Type: "Float64"}, {Name: "wait_p95_min", Type: "Float64"},
		{Name: "reclaims", Type: "UInt64"}, {Name: "kills", Type: "UInt64"}, {Name: "requeued", Type: "UInt64"},
	}}
	for _, enforce := range []bool{false, true} {
		cfg := simrun.DefaultConfig()
		cfg.Sim, cfg.Duration, cfg.Enforce = fleet, span, enforce
		if span < cfg.Step {
			cfg.Step = span
		}
		rep, err := simrun.Run(ctx, cfg)
		if err != nil {
			return demoSection{}, fmt.Errorf("demo: scheduler simulation: %w", err)
		}
		mode := "off"
		if enforce {
			mode = "on"
		}
		res.Rows = append(res.Rows, []any{
			mode, round1(100 * rep.Utilisation), round1(100 * rep.Effective), round1(rep.IdleGPUh), round1(rep.ZombieGPUh),
			round1(rep.WaitP50.Minutes()), round1(rep.WaitP95.Minutes()),
			uint64(rep.Actions["reclaim ok"]), uint64(rep.Actions["kill ok"]), uint64(rep.Requeued),
		})
	}
	return demoSection{
		title: "Scheduler effect: the same fleet and seed admitted by gpupool's scheduler, policies off vs on (simulated; effective = allocated minus idle)",
		res:   res,
	}, nil
}

func round1(x float64) float64 { return float64(int64(x*10+0.5)) / 10 }
