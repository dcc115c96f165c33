package findings

import (
	"context"
	"fmt"
	"time"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
)

// computeBoundGroups are compute_bound's pool groups.
func computeBoundGroups(cfg Config) []poolGroup[ComputeBoundConfig] {
	return poolGroups(cfg, func(t Thresholds) ComputeBoundConfig { return t.ComputeBound }, func(c ComputeBoundConfig) bool { return c.Enabled })
}

// computeBoundReqs asks, per pool group, for the jobs whose SM and tensor pipes
// are busy while DRAM is not.
func (a *Analyzer) computeBoundReqs(ps *pass) []statsReq {
	return groupReqs(ps, computeBoundGroups(a.cfg), func(c ComputeBoundConfig) (time.Duration, statsReq) {
		return c.Window, statsReq{
			window: c.Window, withDRAM: true,
			condition: "sm_q[2] >= {min_sm:Float64} AND tensor_p50 >= {min_tensor:Float64} AND dram_p50 <= {max_dram:Float64}",
			params: store.Params{
				"min_sm": floatParam(c.MinSMP50), "min_tensor": floatParam(c.MinTensorP50), "max_dram": floatParam(c.MaxDRAMP50),
			},
		}
	})
}

// detectComputeBound finds jobs whose SM and tensor pipes are busy while DRAM is
// not: the other side of memory_bound. A hint with no waste: the GPU is used
// well, and a faster card or lower precision, not a smaller card, would speed it.
func (a *Analyzer) detectComputeBound(ctx context.Context, ps *pass) ([]detection, error) {
	var out []detection
	all, err := ps.jobStats(ctx, a, schemas.KindComputeBound)
	if err != nil {
		return nil, fmt.Errorf("compute_bound: %w", err)
	}
	for gi, g := range computeBoundGroups(a.cfg) {
		c, stats := g.cfg, all[gi]
		for i := range stats {
			s := &stats[i]
			d := newJobDetection(schemas.KindComputeBound, s, ps.now.Add(-c.Window), 0)
			d.f.Evidence = evidence(
				"window_minutes", c.Window.Minutes(), "samples", s.samples, "gpus", d.gpus,
				"sm_active_p50", s.smQ[1], "sm_active_p90", s.smQ[2], "tensor_active_p50", s.tensorP50,
				"dram_active_p50", s.dramP50,
			)
			d.f.Recommendation = fmt.Sprintf("SM active %.0f%% and tensor %.0f%% (p50) while DRAM is %.0f%% busy over %s: "+
				"compute-bound; the GPUs are well used: lower precision (BF16, FP8) or a card with more compute would speed it, a smaller card would not",
				100*s.smQ[1], 100*s.tensorP50, 100*s.dramP50, fmtWindow(c.Window))
			out = append(out, d)
		}
	}
	return out, nil
}
