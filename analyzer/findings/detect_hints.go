package findings

import (
	"context"
	"fmt"
	"time"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
)

// jobStats is one job's row of a statsReq's answer (queryJobStats).
type jobStats struct {
	j                 *runningJob
	node, card        string
	gpus, migProfiles []string
	samples           int64
	activeFraction    float64
	smQ               []float64 // p10, p50, p90, p95
	// smActiveQ is SM activity over the active samples alone: p50, p95 (NaN
	// when none was active).
	smActiveQ []float64
	// memP10Fraction is the 10th percentile of used over total memory.
	memP10Fraction                  float64
	dramP50, tensorP50, mbSustained float64
	peakMemMiB, fbTotalMiB          float64
}

// weight is the job's GPU-equivalents.
func (s *jobStats) weight() float64 {
	w := 0.0
	for range s.gpus {
		w += unitWeight(s.migProfile())
	}
	return w
}

// migProfile is the job's MIG profile ("" on whole GPUs).
func (s *jobStats) migProfile() string {
	for _, m := range s.migProfiles {
		if m != "" {
			return m
		}
	}
	return ""
}

// newJobDetection fills the parts of a job-level finding every kind shares.
func newJobDetection(kind schemas.FindingKind, s *jobStats, since time.Time, share float64) detection {
	d := detection{gpus: s.weight(), wasteShare: share}
	f := &d.f
	f.Kind, f.Job, f.ID = kind, s.j.job, findingID(kind, s.j.job)
	f.Cluster, f.Team, f.Project, f.Pool, f.Node, f.Card = s.j.cluster, s.j.team, s.j.project, s.j.pool, s.node, s.card
	f.GPUUUIDs, f.Since = s.gpus, since
	return d
}

// fedShare is the share of a hint's GPU-hours a well-fed job (SM p50 at fed)
// would not have needed.
func fedShare(smP50, fed float64) float64 { return max(0, 1-smP50/fed) }

// memoryBoundGroups are memory_bound's pool groups.
func memoryBoundGroups(cfg Config) []poolGroup[MemoryBoundConfig] {
	return poolGroups(cfg, func(t Thresholds) MemoryBoundConfig { return t.MemoryBound }, func(c MemoryBoundConfig) bool { return c.Enabled })
}

// memoryBoundReqs asks, per pool group, for the jobs whose DRAM is busy while SM
// and tensor pipes idle.
func (a *Analyzer) memoryBoundReqs(ps *pass) []statsReq {
	return groupReqs(ps, memoryBoundGroups(a.cfg), func(c MemoryBoundConfig) (time.Duration, statsReq) {
		return c.Window, statsReq{
			window: c.Window, withDRAM: true,
			condition: "dram_p50 >= {min_dram:Float64} AND sm_q[2] <= {max_sm:Float64} AND tensor_p50 <= {max_tensor:Float64} AND mb_sustained >= {min_sustained:Float64}",
			params: store.Params{
				"mb_dram": floatParam(c.MinDRAMP50), "mb_sm": floatParam(c.MaxSMP50),
				"min_dram": floatParam(c.MinDRAMP50), "max_sm": floatParam(c.MaxSMP50),
				"max_tensor": floatParam(c.MaxTensorP50), "min_sustained": floatParam(c.MinSustained),
			},
		}
	})
}

// detectMemoryBound finds jobs whose DRAM is busy while SM and tensor pipes idle:
// an optimisation hint (batch larger, fuse kernels, use a card with more
// bandwidth); its waste is what a better-fed job would have saved (fedShare).
func (a *Analyzer) detectMemoryBound(ctx context.Context, ps *pass) ([]detection, error) {
	var out []detection
	all, err := ps.jobStats(ctx, a, schemas.KindMemoryBound)
	if err != nil {
		return nil, fmt.Errorf("memory_bound: %w", err)
	}
	for gi, g := range memoryBoundGroups(a.cfg) {
		c, stats := g.cfg, all[gi]
		for i := range stats {
			s := &stats[i]
			d := newJobDetection(schemas.KindMemoryBound, s, ps.now.Add(-c.Window), fedShare(s.smQ[1], c.FedSM))
			d.f.Evidence = evidence(
				"window_minutes", c.Window.Minutes(), "samples", s.samples, "gpus", d.gpus,
				"dram_active_p50", s.dramP50, "sm_active_p50", s.smQ[1], "sm_active_p90", s.smQ[2],
				"tensor_active_p50", s.tensorP50, "sustained_fraction", s.mbSustained,
			)
			d.f.Recommendation = fmt.Sprintf("DRAM busy %.0f%% (p50) while SM active %.0f%% and tensor %.0f%% over %s: "+
				"memory-bound; larger batches, fused kernels or lower-precision weights would use the GPU better",
				100*s.dramP50, 100*s.smQ[1], 100*s.tensorP50, fmtWindow(c.Window))
			out = append(out, d)
		}
	}
	return out, nil
}

// lowUtilGroups are low_util's pool groups.
func lowUtilGroups(cfg Config) []poolGroup[LowUtilConfig] {
	return poolGroups(cfg, func(t Thresholds) LowUtilConfig { return t.LowUtil }, func(c LowUtilConfig) bool { return c.Enabled })
}

// lowUtilReqs asks, per pool group, for the long jobs whose median SM activity
// stays low though they are busy.
func (a *Analyzer) lowUtilReqs(ps *pass) []statsReq {
	return groupReqs(ps, lowUtilGroups(a.cfg), func(c LowUtilConfig) (time.Duration, statsReq) {
		return max(c.Window, c.MinRuntime), statsReq{
			window:    c.Window,
			condition: "sm_q[2] <= {max_sm:Float64} AND active_fraction >= {min_active:Float64}",
			params: store.Params{
				"active": floatParam(c.ActiveThreshold), "max_sm": floatParam(c.MaxSMP50),
				"min_active": floatParam(c.MinActiveFraction),
			},
		}
	})
}

// detectLowUtil finds long jobs whose median SM activity stays low though they are
// busy: a hint, with the distribution; its waste is what a better-fed job would
// have saved (fedShare), though the GPUs are in use.
func (a *Analyzer) detectLowUtil(ctx context.Context, ps *pass) ([]detection, error) {
	var out []detection
	all, err := ps.jobStats(ctx, a, schemas.KindLowUtil)
	if err != nil {
		return nil, fmt.Errorf("low_util: %w", err)
	}
	for gi, g := range lowUtilGroups(a.cfg) {
		c, stats := g.cfg, all[gi]
		for i := range stats {
			s := &stats[i]
			d := newJobDetection(schemas.KindLowUtil, s, ps.now.Add(-c.Window), fedShare(s.smQ[1], c.FedSM))
			d.f.Evidence = evidence(
				"window_minutes", c.Window.Minutes(), "samples", s.samples, "gpus", d.gpus,
				"sm_active_p10", s.smQ[0], "sm_active_p50", s.smQ[1], "sm_active_p90", s.smQ[2],
				"active_fraction", s.activeFraction, "mem_used_mib", s.peakMemMiB,
			)
			d.f.Recommendation = fmt.Sprintf("SM active p10/p50/p90 %.0f/%.0f/%.0f%% over %s while busy %.0f%% of the time: "+
				"the job uses a fraction of its GPUs; profile its input pipeline, raise the batch size or share the GPUs",
				100*s.smQ[0], 100*s.smQ[1], 100*s.smQ[2], fmtWindow(c.Window), 100*s.activeFraction)
			out = append(out, d)
		}
	}
	return out, nil
}
