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
