package main

import (
	"context"
	"fmt"
	"time"

	"github.com/gpupool/gpupool/collector/sim"
	"github.com/gpupool/gpupool/reports/summary"
	"github.com/gpupool/gpupool/scheduler/simrun"
)

// schedulerEffect runs the demo's fleet (same configuration, seed and span) twice
// more in simulation, its jobs admitted by gpupool's scheduler: once with the
// policies off and once with them on (idle dev jobs notified after 30 min and
// reclaimed 15 min later, zombies killed after 10 min). The pipeline run above
// does not enforce anything, so this is what enforcement would have changed.
func schedulerEffect(ctx context.Context, fleet sim.Config, span time.Duration) (summary.Section, error) {
	var reps []simrun.Report
	for _, enforce := range []bool{false, true} {
		cfg := simrun.DefaultConfig()
		cfg.Sim, cfg.Duration, cfg.Enforce = fleet, span, enforce
		if span < cfg.Step {
			cfg.Step = span
		}
		rep, err := simrun.Run(ctx, cfg)
		if err != nil {
			return summary.Section{}, fmt.Errorf("demo: scheduler simulation: %w", err)
		}
		reps = append(reps, rep)
	}
	return summary.SchedulerEffect(reps...), nil
}
