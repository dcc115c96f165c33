package findings

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
)

// jobStatsSQL returns the distribution of activity of each job in {jobs}/{gpus}
// over the window, over all its GPUs' samples, keeping the jobs whose samples span
// the window on every GPU and that the detector's condition (%s, over the columns
// below) selects; %[1]s and %[2]s add the DRAM and tensor medians or zeros. Samples
// are aggregated per GPU first (the table is ordered by
// GPU, and the job ↔ GPU join is then a join of a few thousand rows, not of every
// sample), and the per-GPU states are merged per job. Quantiles are BFloat16: a
// histogram of values rounded to 8 bits of mantissa (under 0.4 %% error on a
// ratio), deterministic and cheap where exact quantiles would sort every sample.
const jobStatsSQL = `
SELECT
    j.job AS job,
    any(s.node) AS node, any(s.card) AS card, max(s.fb_total_mib) AS fb_total_mib,
    groupArray(s.gpu_uuid) AS gpus, groupUniqArray(s.mig_profile) AS mig_profiles,
    sum(s.samples) AS samples, sum(s.sm_samples) AS sm_samples, min(s.span_ms) AS span_ms,
    sum(s.active) / samples AS active_fraction,
    quantilesBFloat16Merge(0.1, 0.5, 0.9, 0.95)(s.sm_q) AS sm_q,
    quantilesBFloat16Merge(0.5, 0.95)(s.sm_active_q) AS sm_active_q,
    quantileBFloat16Merge(0.1)(s.mem_q) / greatest(max(s.fb_total_mib), 1) AS mem_p10_fraction,
    %[1]s
    sum(s.mb) / samples AS mb_sustained,
    max(s.peak_mem_mib) AS peak_mem_mib
FROM (
    SELECT
        gpu_uuid, any(node) AS node, any(card) AS card, any(mig_profile) AS mig_profile, max(fb_total_mib) AS fb_total_mib,
        count() AS samples, countIf(sm_active IS NOT NULL) AS sm_samples,
        dateDiff('millisecond', min(ts), max(ts)) AS span_ms,
        countIf(` + activeExpr + ` >= {active:Float64}) AS active,
        quantilesBFloat16State(0.1, 0.5, 0.9, 0.95)(sm_active) AS sm_q,
        quantilesBFloat16State(0.5, 0.95)(if(` + activeExpr + ` >= {active:Float64}, sm_active, NULL)) AS sm_active_q,
        quantileBFloat16State(0.1)(fb_used_mib) AS mem_q,
        %[2]s
        countIf(dram_active >= {mb_dram:Float64} AND sm_active <= {mb_sm:Float64}) AS mb,
        max(fb_used_mib) AS peak_mem_mib
    FROM gpu_samples
    WHERE ts > {from:DateTime64(3, 'UTC')} AND ts <= {to:DateTime64(3, 'UTC')}
      AND gpu_uuid IN {gpus:Array(String)}
    GROUP BY gpu_uuid
) AS s
INNER JOIN ` + jobGPUs + ` AS j ON s.gpu_uuid = j.gpu_uuid
GROUP BY j.job
HAVING span_ms >= {min_span_ms:Int64} AND samples >= {min_samples:UInt64} AND sm_samples >= {min_samples:UInt64}
   AND (%[3]s)
ORDER BY job`

// neighboursSQL lists, per GPU, the jobs whose processes were active on it (SM
// share above 1 %) during the window: a GPU another job was active on mixes that
// job's activity into its samples. A zombie beside a new job does not count (it
// does nothing), nor do processes without a figure of their own.
const neighboursSQL = `
SELECT gpu_uuid, groupUniqArray(job) AS active_jobs
FROM process_samples
WHERE ts > {from:DateTime64(3, 'UTC')} AND ts <= {to:DateTime64(3, 'UTC')}
  AND gpu_uuid IN {gpus:Array(String)} AND job != '' AND sm_util > 0.01
GROUP BY gpu_uuid`

// DRAM and tensor medians cost a quantile state each per GPU; only memory_bound
// needs them, so the other detectors ask for zeros.
const (
	dramMerge   = "quantileBFloat16Merge(0.5)(s.dram_q) AS dram_p50, quantileBFloat16Merge(0.5)(s.tensor_q) AS tensor_p50,"
	dramState   = "quantileBFloat16State(0.5)(dram_active) AS dram_q, quantileBFloat16State(0.5)(tensor_active) AS tensor_q,"
	noDRAMMerge = "0 AS dram_p50, 0 AS tensor_p50,"
)

// jobStats is one row of jobStatsSQL, with the job it is about.
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

// queryJobStats runs jobStatsSQL with condition over [now-window, now] for the
// jobs of group g running since heldSince.
func queryJobStats[T any](ctx context.Context, a *Analyzer, ps *pass, g poolGroup[T], heldSince time.Time,
	window time.Duration, condition string, withDRAM bool, p store.Params) ([]jobStats, error) {
	set := selectJobs(ps.running, g, heldSince)
	// A GPU several jobs share reports their activity together: no one job's
	// distribution can be read from it.
	set = set.without(func(j *runningJob) bool {
		return slices.ContainsFunc(j.gpus, func(u string) bool { return len(ps.holders[u]) > 1 })
	})
	if len(set.gpus) == 0 {
		return nil, nil
	}
	// Nor one a neighbour used during the window and has left since.
	active, err := ps.neighbours(ctx, a.q, window)
	if err != nil {
		return nil, err
	}
	set = set.without(func(j *runningJob) bool {
		return slices.ContainsFunc(j.gpus, func(u string) bool {
			return slices.ContainsFunc(active[u], func(o string) bool { return o != j.job })
		})
	})
	if len(set.gpus) == 0 {
		return nil, nil
	}
	set.params(p)
	p["from"], p["to"] = tsParam(ps.now.Add(-window)), tsParam(ps.now)
	p["min_span_ms"] = durMsParam(time.Duration(float64(window) * a.cfg.MinCoverage))
	p["min_samples"] = intParam(int64(a.cfg.MinSamples))
	for _, k := range []string{"active", "mb_dram", "mb_sm"} {
		if _, ok := p[k]; !ok {
			p[k] = "0"
		}
	}
	merge, state := noDRAMMerge, ""
	if withDRAM {
		merge, state = dramMerge, dramState
	}
	res, err := a.q.Query(ctx, fmt.Sprintf(jobStatsSQL, merge, state, condition), p)
	if err != nil {
		return nil, err
	}
	r := rowReader{res: res}
	out := make([]jobStats, 0, len(res.Rows))
	for i := range res.Rows {
		s := jobStats{
			j: set.byKey[r.str(i, "job")], node: r.str(i, "node"), card: r.str(i, "card"),
			gpus: r.strings(i, "gpus"), migProfiles: r.strings(i, "mig_profiles"), samples: r.int(i, "samples"),
			activeFraction: r.float(i, "active_fraction"), smQ: r.floats(i, "sm_q"), smActiveQ: r.floats(i, "sm_active_q"),
			memP10Fraction: r.float(i, "mem_p10_fraction"),
			dramP50:        r.float(i, "dram_p50"), tensorP50: r.float(i, "tensor_p50"),
			mbSustained: r.float(i, "mb_sustained"), peakMemMiB: r.float(i, "peak_mem_mib"), fbTotalMiB: r.float(i, "fb_total_mib"),
		}
		// A job whose GPUs are not all sampled through the window is not judged.
		if s.j == nil || len(s.gpus) != len(s.j.gpus) {
			continue
		}
		slices.Sort(s.gpus)
		for len(s.smQ) < 4 {
			s.smQ = append(s.smQ, 0)
		}
		for len(s.smActiveQ) < 2 {
			s.smActiveQ = append(s.smActiveQ, 0)
		}
		out = append(out, s)
	}
	if r.err != nil {
		return nil, fmt.Errorf("read result: %w", r.err)
	}
	return out, nil
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

// detectMemoryBound finds jobs whose DRAM is busy while SM and tensor pipes idle:
// an optimisation hint (batch larger, fuse kernels, use a card with more
// bandwidth); its waste is what a better-fed job would have saved (fedShare).
func (a *Analyzer) detectMemoryBound(ctx context.Context, ps *pass) ([]detection, error) {
	var out []detection
	groups := poolGroups(a.cfg, func(t Thresholds) MemoryBoundConfig { return t.MemoryBound }, func(c MemoryBoundConfig) bool { return c.Enabled })
	for _, g := range groups {
		c := g.cfg
		stats, err := queryJobStats(ctx, a, ps, g, ps.now.Add(-c.Window), c.Window,
			"dram_p50 >= {min_dram:Float64} AND sm_q[2] <= {max_sm:Float64} AND tensor_p50 <= {max_tensor:Float64} AND mb_sustained >= {min_sustained:Float64}",
			true,
			store.Params{
				"mb_dram": floatParam(c.MinDRAMP50), "mb_sm": floatParam(c.MaxSMP50),
				"min_dram": floatParam(c.MinDRAMP50), "max_sm": floatParam(c.MaxSMP50),
				"max_tensor": floatParam(c.MaxTensorP50), "min_sustained": floatParam(c.MinSustained),
			})
		if err != nil {
			return nil, fmt.Errorf("memory_bound: %w", err)
		}
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

// detectLowUtil finds long jobs whose median SM activity stays low though they are
// busy: a hint, with the distribution; its waste is what a better-fed job would
// have saved (fedShare), though the GPUs are in use.
func (a *Analyzer) detectLowUtil(ctx context.Context, ps *pass) ([]detection, error) {
	var out []detection
	groups := poolGroups(a.cfg, func(t Thresholds) LowUtilConfig { return t.LowUtil }, func(c LowUtilConfig) bool { return c.Enabled })
	for _, g := range groups {
		c := g.cfg
		stats, err := queryJobStats(ctx, a, ps, g, ps.now.Add(-max(c.Window, c.MinRuntime)), c.Window,
			"sm_q[2] <= {max_sm:Float64} AND active_fraction >= {min_active:Float64}", false,
			store.Params{
				"active": floatParam(c.ActiveThreshold), "max_sm": floatParam(c.MaxSMP50),
				"min_active": floatParam(c.MinActiveFraction),
			})
		if err != nil {
			return nil, fmt.Errorf("low_util: %w", err)
		}
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
