package summary

import (
	"github.com/gpupool/gpupool/analyzer/chargeback"
	"github.com/gpupool/gpupool/internal/simrun"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
)

// Analyzer is the analyzer's part of a run's summary (the demo's): findings by
// kind over the episodes that opened during the run, and cost by team.
func Analyzer(fs []schemas.Finding, rows []chargeback.Row) []Section {
	return []Section{
		{"Findings by kind (episodes opened during the run; waste from each condition's start to the last pass that saw it, at the price book's rate)", FindingsByKind(fs)},
		{"Cost by team (chargeback: GPU-hours held × the card type's price; idle = held while the GPU was not active)", CostByTeam(rows)},
	}
}

// SchedulerEffect compares simrun's simulations of one fleet, one row per report:
// with the scheduler's policies off and on (Report.Enforce), utilisation,
// goodput, idle and zombie GPU-hours, the waiting jobs' and the requeued attempts'
// queue waits and the actions taken.
func SchedulerEffect(reps ...simrun.Report) Section {
	res := &store.Result{Columns: cols("enforcement", "String",
		"utilisation_pct", "Float64", "effective_pct", "Float64", "goodput_gpu_hours", "Float64",
		"idle_gpu_hours", "Float64", "zombie_gpu_hours", "Float64",
		"wait_mean_min", "Float64", "wait_p50_min", "Float64", "wait_p95_min", "Float64", "requeued_wait_p95_min", "Float64",
		"reclaims", "UInt64", "kills", "UInt64", "requeued", "UInt64")}
	for _, rep := range reps {
		mode := "off"
		if rep.Enforce {
			mode = "on"
		}
		res.Rows = append(res.Rows, []any{
			mode, round1(100 * rep.Utilisation), round1(100 * rep.Effective), round1(rep.GoodputGPUh), round1(rep.IdleGPUh), round1(rep.ZombieGPUh),
			round1(rep.WaitMean.Minutes()), round1(rep.WaitP50.Minutes()), round1(rep.WaitP95.Minutes()), round1(rep.RequeuedWaitP95.Minutes()),
			uint64(rep.Actions["reclaim ok"]), uint64(rep.Actions["kill ok"]), uint64(rep.Requeued),
		})
	}
	return Section{
		Title: "Fast benchmark (internal/simrun, not the pipeline): the same fleet and seed in the simulator alone, policies off vs on, " +
			"findings from the simulator's ground truth (a perfect analyzer); wait = jobs that waited, requeued attempts apart",
		Table: res,
	}
}
