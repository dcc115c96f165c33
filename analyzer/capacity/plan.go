package capacity

import (
	"fmt"
	"math"
	"sort"
)

// HoursPerMonth prices a GPU for a month: 365 × 24 / 12.
const HoursPerMonth = 730

// Work returns the new work of each hour, in GPU-hours: what ran plus the growth
// of the backlog, at least 0 (running and queued are GPUs averaged over the hour).
func Work(running, queued []float64) []float64 {
	out := make([]float64, len(running))
	prev := 0.0
	for i := range running {
		q := 0.0
		if i < len(queued) {
			q = queued[i]
		}
		out[i] = math.Max(0, running[i]+q-prev)
		prev = q
	}
	return out
}

// Waits returns the wait of the work arriving in each hour with usable GPUs, in
// hours: a fluid FIFO queue whose backlog drains at usable GPU-hours per hour.
// With no usable GPU every hour with work waits +Inf.
func Waits(work []float64, usable float64) []float64 {
	out := make([]float64, len(work))
	backlog := 0.0
	for i, w := range work {
		backlog = math.Max(0, backlog+w-usable)
		switch {
		case backlog == 0:
			out[i] = 0
		case usable <= 0:
			out[i] = math.Inf(1)
		default:
			out[i] = backlog / usable
		}
	}
	return out
}

// P95 returns the 95th percentile of waits weighted by work (the wait that 95 %
// of the arriving GPU-hours do not exceed); 0 when there is no work.
func P95(waits, work []float64) float64 {
	type wv struct{ wait, w float64 }
	var xs []wv
	total := 0.0
	for i, w := range work {
		if w > 0 {
			xs = append(xs, wv{waits[i], w})
			total += w
		}
	}
	if total == 0 {
		return 0
	}
	sort.Slice(xs, func(i, j int) bool { return xs[i].wait < xs[j].wait })
	acc := 0.0
	for _, x := range xs {
		acc += x.w
		if acc >= 0.95*total {
			return x.wait
		}
	}
	return xs[len(xs)-1].wait
}

// Plan is the planner's answer for one cluster and card type.
type Plan struct {
	// TargetP95Hours is the p95 wait asked for; P95Hours the forecast's with the
	// GPUs there now, P95AfterHours with ExtraGPUs more.
	TargetP95Hours float64 `json:"target_p95_hours"`
	P95Hours       float64 `json:"p95_hours"`
	P95AfterHours  float64 `json:"p95_after_hours"`
	ExtraGPUs      int     `json:"extra_gpus"`
	// Reached is false when even MaxExtra GPUs more miss the target.
	Reached bool `json:"reached"`
	// Basis is what set ExtraGPUs: "p95 wait" (the queue model) or "mean
	// demand" (the forecast demand's mean needs more GPUs than the wait model
	// asks); Why says it in one line.
	Basis string `json:"basis"`
	Why   string `json:"why"`
	// CostPerMonth is ExtraGPUs at PricePerGPUHour for HoursPerMonth; nil when
	// the card has no price.
	PricePerGPUHour *float64 `json:"price_per_gpu_hour"`
	Currency        string   `json:"currency,omitempty"`
	CostPerMonth    *float64 `json:"cost_per_month"`
}

// PlanExtra finds the fewest extra GPUs (0 to maxExtra) that keep the p95 wait
// of work at or under targetHours, with usable = (gpus + extra) × efficiency.
func PlanExtra(work []float64, gpus, efficiency, targetHours float64, maxExtra int) (Plan, error) {
	if targetHours < 0 || efficiency <= 0 || efficiency > 1 || maxExtra < 0 {
		return Plan{}, fmt.Errorf("capacity: plan: target %v h, efficiency %v, max extra %d: want target ≥ 0, efficiency in (0, 1]", targetHours, efficiency, maxExtra)
	}
	p95 := func(extra int) float64 { return P95(Waits(work, (gpus+float64(extra))*efficiency), work) }
	p := Plan{TargetP95Hours: targetHours, P95Hours: p95(0)}
	// The p95 wait falls as GPUs are added: search for the first extra that meets the target.
	lo, hi := 0, maxExtra
	if p95(hi) > targetHours {
		p.ExtraGPUs, p.P95AfterHours = maxExtra, p95(maxExtra)
		return p, nil
	}
	for lo < hi {
		mid := (lo + hi) / 2
		if p95(mid) <= targetHours {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	p.ExtraGPUs, p.P95AfterHours, p.Reached = lo, p95(lo), true
	return p, nil
}

// The bases of a Plan.
const (
	BasisWait  = "p95 wait"
	BasisQueue = "standing queue"
)

// Recommend makes the plan consistent with demand and capacity, and explains
// it in one line. The queue model sees the work that arrives each hour; a
// backlog that never drains (jobs that wait through every hour of a week) adds
// no new work per hour, so demand at several times the GPUs there would ask for
// nothing. So the extra GPUs are at least those that make the usable GPUs
// ((gpus + extra) × efficiency) hold what ran (running, the last week's mean)
// plus the standing queue (queued, the fewest GPUs waiting in any hour of the
// last week). work is the forecast work the plan was made for.
func Recommend(p Plan, work []float64, running, queued, gpus, efficiency float64, maxExtra int) Plan {
	waitExtra := p.ExtraGPUs
	p.Basis = BasisWait
	need := int(math.Ceil((running+queued)/efficiency - gpus - 1e-9))
	if need > p.ExtraGPUs {
		p.Basis, p.ExtraGPUs, p.Reached = BasisQueue, min(need, maxExtra), need <= maxExtra
		p.P95AfterHours = P95(Waits(work, (gpus+float64(p.ExtraGPUs))*efficiency), work)
	}
	target := hours(p.TargetP95Hours)
	switch {
	case p.Basis == BasisQueue:
		p.Why = fmt.Sprintf("%.1f GPUs waited through every hour of the last week on top of %.1f running, on %.1f GPUs (at most %.0f%% of them ever running): +%d to serve them (the p95-wait model alone asks +%d)",
			queued, running, gpus, 100*efficiency, need, waitExtra)
	case !p.Reached:
		p.Why = fmt.Sprintf("even +%d leave the forecast p95 wait at %s (target %s)", p.ExtraGPUs, hours(p.P95AfterHours), target)
	case p.ExtraGPUs > 0:
		p.Why = fmt.Sprintf("the forecast work waits %s at p95 on today's %.1f GPUs; +%d bring it to %s (target %s)",
			hours(p.P95Hours), gpus, p.ExtraGPUs, hours(p.P95AfterHours), target)
	default:
		p.Why = fmt.Sprintf("p95 wait %s on today's %.1f GPUs (target %s), and no queue stands: nothing to add", hours(p.P95Hours), gpus, target)
	}
	return p
}
