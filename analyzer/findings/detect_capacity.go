package findings

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
)

// memoryCapacityCondition keeps jobs whose memory stays mostly full while SM
// activity stays low, DRAM is not the bottleneck and the engine keeps working.
const memoryCapacityCondition = `mem_p10_fraction >= {min_mem:Float64} AND peak_mem_mib >= {min_mem_mib:Float64}
    AND sm_q[4] <= {max_sm_p95:Float64}
    AND dram_p50 <= {max_dram:Float64} AND active_fraction >= {min_active:Float64}`

// maxTimeSlices bounds the time-slicing replicas memory_capacity recommends: more
// tenants than this on one GPU make latency a lottery.
const maxTimeSlices = 4

// shareOption is what memory_capacity proposes: a smaller MIG profile of the same
// card, or a time-slicing share of the unit the job holds.
type shareOption struct {
	name string
	// share is the proposed unit's part of the current one (0..1).
	share float64
	// memMiB is the memory the proposed unit holds (time-slicing: the unit's
	// memory / replicas, which the tenant must cap itself to).
	memMiB float64
}

// memoryCapacityGroups are memory_capacity's pool groups.
func memoryCapacityGroups(cfg Config) []poolGroup[MemoryCapacityConfig] {
	return poolGroups(cfg, func(t Thresholds) MemoryCapacityConfig { return t.MemoryCapacity },
		func(c MemoryCapacityConfig) bool { return c.Enabled })
}

// memoryCapacityReqs asks, per pool group, for the jobs holding most of their
// memory with little compute (memoryCapacityCondition).
func (a *Analyzer) memoryCapacityReqs(ps *pass) []statsReq {
	return groupReqs(ps, memoryCapacityGroups(a.cfg), func(c MemoryCapacityConfig) (time.Duration, statsReq) {
		return c.Window, statsReq{
			window: c.Window, condition: memoryCapacityCondition, withDRAM: true,
			params: store.Params{
				"active": floatParam(c.ActiveThreshold), "min_mem": floatParam(c.MinMemFraction), "min_mem_mib": floatParam(c.MinMemMiB),
				"max_sm_p95": floatParam(c.MaxSMP95), "max_dram": floatParam(c.MaxDRAMP50),
				"min_active": floatParam(c.MinActiveFraction),
			},
		}
	})
}

// detectMemoryCapacity finds jobs holding most of their GPUs' memory with little
// compute (an inference server that reserved its card's memory for a KV cache it
// never fills): over-provisioned, never idle. It recommends the smallest MIG
// profile or time-slicing share whose compute covers the job's SM p95 with
// headroom, and prices the saving.
func (a *Analyzer) detectMemoryCapacity(ctx context.Context, ps *pass) ([]detection, error) {
	var out []detection
	all, err := ps.jobStats(ctx, a, schemas.KindMemoryCapacity)
	if err != nil {
		return nil, fmt.Errorf("memory_capacity: %w", err)
	}
	for gi, g := range memoryCapacityGroups(a.cfg) {
		c, stats := g.cfg, all[gi]
		for i := range stats {
			s := &stats[i]
			opt := a.shareFor(s, c)
			if opt.share >= 1 {
				continue // nothing smaller covers its compute
			}
			share := 1 - opt.share
			cur, currency, perr := ps.price(ctx, s.card)
			d := newJobDetection(schemas.KindMemoryCapacity, s, ps.now.Add(-c.Window), share)
			d.f.Recommended = opt.name
			kv := []any{
				"window_minutes", c.Window.Minutes(), "samples", s.samples, "gpus", d.gpus,
				"mem_used_fraction_p10", s.memP10Fraction, "peak_mem_mib", s.peakMemMiB, "card_mem_mib", s.fbTotalMiB,
				"sm_active_p50", s.smQ[1], "sm_active_p95", s.smQ[3], "dram_active_p50", s.dramP50,
				"active_fraction", s.activeFraction, "proposed_share", opt.share, "proposed_mem_mib", opt.memMiB,
			}
			saving := ""
			if perr == nil {
				perDay := cur * d.gpus * share * 24
				kv = append(kv, "price_per_gpu_hour", cur, "savings_per_day", perDay, "savings_per_month", perDay*30)
				saving = fmt.Sprintf("; saves %.2f %s/day, %.2f %s/month", perDay, currency, perDay*30, currency)
			}
			d.f.Evidence = evidence(kv...)
			d.f.Recommendation = fmt.Sprintf("memory %.0f%% full (p10) with SM active %.0f%% (p95) and the engine busy %.0f%% of the time over %s: "+
				"over-provisioned, not idle. Cap its memory to %.1f GiB (batch requests; a serving engine's memory cap such as "+
				"vLLM's gpu_memory_utilization) and run it on %s%s",
				100*s.memP10Fraction, 100*s.smQ[3], 100*s.activeFraction, fmtWindow(c.Window), opt.memMiB/1024, opt.name, saving)
			out = append(out, d)
		}
	}
	return out, nil
}

// shareFor picks the smallest unit whose compute covers the job's SM p95 ×
// headroom: a smaller MIG profile of the job's card from card_options, else a
// time-slicing share (1/k of what it holds).
func (a *Analyzer) shareFor(s *jobStats, c MemoryCapacityConfig) shareOption {
	curSlices := 7
	if m := s.migProfile(); m != "" {
		curSlices = int(math.Round(unitWeight(m) * 7))
	}
	need := s.smQ[3] * c.ComputeHeadroom
	var best *CardOption
	for i := range a.cfg.CardOptions {
		o := &a.cfg.CardOptions[i]
		if o.Card != s.card || o.Slices == 0 || o.Slices >= curSlices || float64(o.Slices) < need*float64(curSlices) {
			continue
		}
		if best == nil || o.Slices < best.Slices {
			best = o
		}
	}
	if best != nil {
		return shareOption{name: best.name(), share: float64(best.Slices) / float64(curSlices), memMiB: float64(best.MemoryMiB)}
	}
	k := min(maxTimeSlices, max(1, int(1/math.Max(need, 1e-9))))
	unit := "a GPU"
	if s.migProfile() != "" {
		unit = "its MIG " + s.migProfile() + " instance"
	}
	return shareOption{
		name:  fmt.Sprintf("a 1/%d time-slicing share of %s", k, unit),
		share: 1 / float64(k), memMiB: s.fbTotalMiB / float64(k),
	}
}
