package summary

import (
	"slices"

	"github.com/gpupool/gpupool/analyzer/chargeback"
	"github.com/gpupool/gpupool/store"
)

// Chargeback is one row per job attempt and card type: GPU-hours, used, idle
// and unobserved GPU-hours (held with no telemetry at all), cost, queue wait, the cost of a failed attempt that was rerun and
// energy.
func Chargeback(rows []chargeback.Row) *store.Result {
	res := &store.Result{Columns: cols("team", "String", "project", "String", "job", "String", "card", "String",
		"gpu_hours", "Float64", "used_gpu_hours", "Float64", "idle_gpu_hours", "Float64", "unobserved_gpu_hours", "Float64",
		"cost", "Float64", "queue_wait_hours", "Float64",
		"failed_rerun_cost", "Float64", "energy_kwh", "Float64", "currency", "String")}
	for _, r := range rows {
		rerun := any(0.0)
		if r.FailedRerunCost == nil || *r.FailedRerunCost != 0 {
			rerun = money(r.FailedRerunCost)
		}
		res.Rows = append(res.Rows, []any{r.Team, r.Project, r.Job, r.Card, r.GPUHours, r.UsedGPUHours, r.IdleGPUHours, r.UnobservedGPUHours, money(r.Cost),
			r.QueueWaitHours, rerun, r.EnergyKWh, r.Currency})
	}
	return res
}

// CostByTeam sums the chargeback per team, in team order: jobs, GPU-hours, used,
// idle and unobserved GPU-hours, cost, idle cost and the cost of failed attempts that were rerun. A
// team with any unpriced hour, or priced in more than one currency, shows its
// costs as unpriced.
func CostByTeam(rows []chargeback.Row) *store.Result {
	res := &store.Result{Columns: cols("team", "String", "jobs", "UInt64", "gpu_hours", "Float64", "used_gpu_hours", "Float64",
		"idle_gpu_hours", "Float64", "unobserved_gpu_hours", "Float64", "cost", "Float64", "idle_cost", "Float64", "failed_rerun_cost", "Float64", "currency", "String")}
	type agg struct {
		jobs                  map[string]bool
		hours, used, idle     float64
		unobserved            float64
		cost, idleCost, rerun float64
		unpriced, mixed       bool
		currency              string
	}
	var order []string
	by := map[string]*agg{}
	for _, r := range rows {
		a := by[r.Team]
		if a == nil {
			a = &agg{jobs: map[string]bool{}}
			by[r.Team] = a
			order = append(order, r.Team)
		}
		a.jobs[r.Job] = true
		a.hours += r.GPUHours
		a.used += r.UsedGPUHours
		a.idle += r.IdleGPUHours
		a.unobserved += r.UnobservedGPUHours
		if r.Cost == nil || r.IdleCost == nil || r.FailedRerunCost == nil {
			a.unpriced = true
		} else {
			a.cost += *r.Cost
			a.idleCost += *r.IdleCost
			a.rerun += *r.FailedRerunCost
		}
		if r.Currency != "" {
			if a.currency != "" && a.currency != r.Currency {
				a.mixed = true
			}
			a.currency = r.Currency
		}
	}
	slices.Sort(order)
	for _, team := range order {
		a := by[team]
		cost, idleCost, rerun := any(round2(a.cost)), any(round2(a.idleCost)), any(round2(a.rerun))
		if a.unpriced || a.mixed {
			cost, idleCost, rerun = "unpriced", "unpriced", "unpriced"
		}
		res.Rows = append(res.Rows, []any{team, uint64(len(a.jobs)), round2(a.hours), round2(a.used), round2(a.idle), round2(a.unobserved), cost, idleCost, rerun, a.currency})
	}
	return res
}
