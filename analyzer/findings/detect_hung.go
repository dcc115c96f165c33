package findings

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
)

// hungSQL judges the GPUs of running jobs over the hung window and the baseline
// before it. A sample is flat when the profiling fields are reported and SM,
// tensor, DRAM and PCIe all sit near zero; it spins when the graphics engine (or
// GPU utilisation) is nevertheless busy, and is dead when the engine is near zero
// too. last_busy is the last productive sample (SM at least the baseline's
// level): where the drop happened; a noisy sample in the flat stretch (a PCIe or
// DRAM blip, allowed by min_flat) does not move it. Power is read in both phases:
// a spinning kernel draws far less than the math it replaced.
// Only GPUs flat through the window are returned; the job-level rules (every GPU,
// a busy baseline, a simultaneous drop) are applied in Go.
var hungSQL = `
WITH ` + hungFlat + ` AS flat,
     greatest(coalesce(gr_engine_active, 0), coalesce(gpu_util, 0)) AS engine,
     ts > {recent:DateTime64(3, 'UTC')} AS recent
SELECT
    gpu_uuid, any(node) AS node, any(card) AS card, any(mig_profile) AS mig_profile, max(fb_total_mib) AS fb_total_mib,
    countIf(recent) AS samples,
    countIf(recent AND flat) AS flat_n,
    countIf(recent AND flat AND engine >= {spin:Float64}) AS spin_n,
    countIf(recent AND flat AND engine <= {host_max:Float64}) AS dead_n,
    countIf(NOT recent AND sm_active IS NOT NULL) AS base_samples,
    quantileBFloat16If(0.5)(sm_active, NOT recent) AS base_sm_p50,
    quantileBFloat16If(0.5)(engine, recent) AS engine_p50,
    maxIf(sm_active, recent) AS sm_max,
    maxIf(coalesce(tensor_active, 0), recent) AS tensor_max,
    maxIf(coalesce(dram_active, 0), recent) AS dram_max,
    maxIf(coalesce(pcie_rx_bytes_per_s, 0) + coalesce(pcie_tx_bytes_per_s, 0), recent) AS pcie_max,
    minIf(fb_used_mib, recent) AS mem_min,
    quantileBFloat16If(0.5)(power_w, recent) AS power_p50,
    quantileBFloat16If(0.5)(power_w, NOT recent) AS base_power_p50,
    countIf(recent AND power_w IS NOT NULL) AS power_n,
    countIf(NOT recent AND power_w IS NOT NULL) AS base_power_n,
    maxIf(ts, sm_active >= {busy_sm:Float64}) AS last_busy,
    dateDiff('millisecond', minIf(ts, recent), maxIf(ts, recent)) AS span_ms
FROM gpu_samples
WHERE ts > {from:DateTime64(3, 'UTC')} AND ts <= {to:DateTime64(3, 'UTC')}
  AND gpu_uuid IN (
    SELECT gpu_uuid
    FROM gpu_samples
    WHERE ts > {recent:DateTime64(3, 'UTC')} AND ts <= {to:DateTime64(3, 'UTC')} AND gpu_uuid IN {gpus:Array(String)}
    GROUP BY gpu_uuid
    HAVING ` + hungFlatEnough("count()", "countIf("+hungFlat+")", "dateDiff('millisecond', min(ts), max(ts))") + `)
GROUP BY gpu_uuid
HAVING ` + hungFlatEnough("samples", "flat_n", "span_ms")

// hungFlat is a flat sample: the profiling fields reported and SM, tensor, DRAM
// and PCIe all near zero.
const hungFlat = `(sm_active IS NOT NULL AND sm_active <= {max_sm:Float64}
         AND coalesce(tensor_active, 0) <= {max_tensor:Float64} AND coalesce(dram_active, 0) <= {max_dram:Float64}
         AND coalesce(pcie_rx_bytes_per_s, 0) + coalesce(pcie_tx_bytes_per_s, 0) <= {pcie:Float64})`

// hungFlatEnough is the condition on a GPU's window (its sample count, flat
// count and span in ms) for hungSQL to return it. It is applied twice: first
// over the window alone with a few counts, to pick the GPUs (most are busy, and
// their samples need no more than that), then with every figure over the GPUs
// it picked.
func hungFlatEnough(samples, flat, span string) string {
	return samples + " >= {min_samples:UInt64} AND " + span + " >= {min_span_ms:Int64} AND " + flat + " >= " + samples +
		" - greatest(if({min_flat:Float64} < 1, 1, 0), floor((1 - {min_flat:Float64}) * " + samples + "))"
}

// hungMemHeldMiB is the memory a dead GPU must still hold for a host-side hang: a
// job that freed its GPUs is not hung, it is done (or idle).
const hungMemHeldMiB = 1024

// hungMaxPowerRatio is the most a spinning GPU draws, as a share of its
// baseline's median power, when the source reports power in both phases: a
// collective spin keeps the engine resident but does no math, and draws well
// under the busy phase (on every card measured, under 70 %). A GPU whose power
// stays near its busy level is computing something, whatever the counters say.
const hungMaxPowerRatio = 0.8

// Reasons of a hung detection; reasonStall marks a stall signal, not a finding
// (signalStall).
const (
	reasonSpin  = "collective_deadlock"
	reasonHost  = "host_hang"
	reasonStall = "stall"
)

// hungGPU is one row of hungSQL.
type hungGPU struct {
	node, card, mig                              string
	samples, flat, spin, dead, baseSamples       int64
	baseSM, engineP50, smMax, tensorMax, dramMax float64
	pcieMax, memMin, fbTotal                     float64
	power, basePower                             float64
	powerN, basePowerN                           int64
	lastBusy                                     time.Time
}

// detectHung finds hung jobs, one query per group of pools sharing hung settings,
// in two steps: the window alone first (a few minutes of samples), then the
// baseline only for the GPUs of jobs that could be hung (every GPU flat, spinning
// or, on enough GPUs, dead) and have no open hung finding. A job with an open one
// needs no baseline any more: it stays hung while its GPUs stay flat.
func (a *Analyzer) detectHung(ctx context.Context, ps *pass) ([]detection, error) {
	var out []detection
	groups := poolGroups(a.cfg, func(t Thresholds) HungConfig { return t.Hung }, func(c HungConfig) bool { return c.Enabled })
	for _, g := range groups {
		c := g.cfg
		recent := ps.now.Add(-c.Window)
		set := selectJobs(ps.running, g, recent)
		if len(set.gpus) == 0 {
			continue
		}
		p := store.Params{
			"to": tsParam(ps.now), "recent": tsParam(recent),
			"max_sm": floatParam(c.MaxSM), "max_tensor": floatParam(c.MaxTensor), "max_dram": floatParam(c.MaxDRAM),
			"pcie": floatParam(c.PCIeBytesPerS), "spin": floatParam(c.SpinThreshold), "busy_sm": floatParam(c.MinBaselineSM), "host_max": floatParam(c.HostHangMaxActive),
			"min_flat": floatParam(c.MinFlatFraction), "min_samples": intParam(int64(a.cfg.MinSamples)),
			"min_span_ms": durMsParam(time.Duration(float64(c.Window) * a.cfg.MinCoverage)),
		}
		flat, err := a.queryHung(ctx, recent, set.gpus, p)
		if err != nil {
			return nil, err
		}
		var base []string
		for _, key := range slices.Sorted(maps.Keys(set.byKey)) {
			if j := set.byKey[key]; !ps.openHung[key] && !ps.stalled[key] && allFlat(j, flat) {
				base = append(base, j.gpus...)
			}
		}
		if len(base) > 0 {
			withBase, err := a.queryHung(ctx, recent.Add(-c.Baseline), base, p)
			if err != nil {
				return nil, err
			}
			maps.Copy(flat, withBase)
		}
		for _, key := range slices.Sorted(maps.Keys(set.byKey)) {
			if d, ok := a.hungJob(set.byKey[key], flat, c, ps); ok {
				out = append(out, d)
			}
		}
	}
	return out, nil
}

// queryHung runs hungSQL over (from, now] for gpus and returns the flat GPUs.
func (a *Analyzer) queryHung(ctx context.Context, from time.Time, gpus []string, p store.Params) (map[string]hungGPU, error) {
	q := maps.Clone(p)
	q["from"], q["gpus"] = tsParam(from), arrayParam(gpus)
	res, err := a.q.Query(ctx, hungSQL, q)
	if err != nil {
		return nil, fmt.Errorf("hung: %w", err)
	}
	r := rowReader{res: res}
	flat := make(map[string]hungGPU, len(res.Rows))
	for i := range res.Rows {
		flat[r.str(i, "gpu_uuid")] = hungGPU{
			node: r.str(i, "node"), card: r.str(i, "card"), mig: r.str(i, "mig_profile"),
			samples: r.int(i, "samples"), flat: r.int(i, "flat_n"), spin: r.int(i, "spin_n"), dead: r.int(i, "dead_n"),
			baseSamples: r.int(i, "base_samples"), baseSM: r.float(i, "base_sm_p50"), engineP50: r.float(i, "engine_p50"),
			smMax: r.float(i, "sm_max"), tensorMax: r.float(i, "tensor_max"), dramMax: r.float(i, "dram_max"),
			pcieMax: r.float(i, "pcie_max"), memMin: r.float(i, "mem_min"), fbTotal: r.float(i, "fb_total_mib"),
			power: r.float(i, "power_p50"), basePower: r.float(i, "base_power_p50"),
			powerN: r.int(i, "power_n"), basePowerN: r.int(i, "base_power_n"),
			lastBusy: r.time(i, "last_busy"),
		}
	}
	if r.err != nil {
		return nil, fmt.Errorf("hung: read result: %w", r.err)
	}
	return flat, nil
}

// allFlat reports whether every GPU of job j was flat through the window: the
// jobs whose baseline is read, to tell a hang or a stall (a drop from a busy
// phase) from a job that was never busy.
func allFlat(j *runningJob, flat map[string]hungGPU) bool {
	for _, u := range j.gpus {
		if _, ok := flat[u]; !ok {
			return false
		}
	}
	return len(j.gpus) > 0
}

// mostly reports whether n of samples is enough for the flat, spin and dead
// tests: all but (1 − MinFlatFraction) of them, and all but one at least when
// MinFlatFraction is under 1. A stopped job's GPUs show an isolated blip now and
// then (a watchdog's or a monitoring agent's copy, a heartbeat); at a sample a
// minute a 15-minute window has 15 samples, and 97 % of them would allow none,
// so one blip would hide a hang for a whole window and let an open one resolve.
// hungSQL's HAVING is the same rule.
func (c HungConfig) mostly(n, samples int64) bool {
	slack := math.Floor((1 - c.MinFlatFraction) * float64(samples))
	if c.MinFlatFraction < 1 {
		slack = max(slack, 1)
	}
	return float64(n) >= float64(samples)-slack
}

// spins reports whether g kept a kernel resident through the flat window without
// the power of the busy phase (power judged only when reported in both).
func (g hungGPU) spins(c HungConfig) bool {
	if !c.mostly(g.spin, g.samples) {
		return false
	}
	if g.powerN >= g.samples/2 && g.basePowerN > 0 && g.basePower > 0 {
		return g.power <= hungMaxPowerRatio*g.basePower
	}
	return true
}

// hungJob returns the finding for job j if every one of its GPUs hung.
func (a *Analyzer) hungJob(j *runningJob, flat map[string]hungGPU, c HungConfig, ps *pass) (detection, bool) {
	wasOpen, wasStalled := ps.openHung[j.job], ps.stalled[j.job]
	weight, spinning, minBase := 0.0, 0, 1.0
	hung := true // false: a stall signal at most
	var first, last time.Time
	var sum hungGPU
	for _, u := range j.gpus {
		g, ok := flat[u]
		if !ok {
			return detection{}, false
		}
		spin := g.spins(c)
		dead := c.mostly(g.dead, g.samples) && g.memMin >= hungMemHeldMiB
		switch {
		case spin:
			spinning++
		case !dead || len(j.gpus) < c.HostHangMinGPUs:
			hung = false
		}
		if !wasOpen && !wasStalled && (g.baseSamples < int64(a.cfg.MinSamples) || g.baseSM < c.MinBaselineSM) {
			return detection{}, false // no busy profile of its own to have dropped from
		}
		minBase = min(minBase, g.baseSM)
		if first.IsZero() || g.lastBusy.Before(first) {
			first = g.lastBusy
		}
		last = later(last, g.lastBusy)
		weight += unitWeight(g.mig)
		sum.samples, sum.flat, sum.spin, sum.dead = sum.samples+g.samples, sum.flat+g.flat, sum.spin+g.spin, sum.dead+g.dead
		sum.smMax, sum.tensorMax, sum.dramMax = max(sum.smMax, g.smMax), max(sum.tensorMax, g.tensorMax), max(sum.dramMax, g.dramMax)
		sum.pcieMax, sum.engineP50, sum.memMin = max(sum.pcieMax, g.pcieMax), max(sum.engineP50, g.engineP50), max(sum.memMin, g.memMin)
		sum.power, sum.basePower = max(sum.power, g.power), max(sum.basePower, g.basePower)
		sum.powerN, sum.basePowerN = sum.powerN+g.powerN, sum.basePowerN+g.basePowerN
	}
	skew := last.Sub(first)
	since := last
	if wasOpen || last.Before(ps.now.Add(-c.Window-c.Baseline)) {
		since, skew = ps.now.Add(-c.Window), 0 // the drop scrolled out of the look-back; merge keeps the open since
	}
	if !wasOpen && skew > c.MaxSkew {
		hung = false // GPUs that stopped one by one: not one hang
	}
	if !wasOpen && wasStalled {
		hung = false // a stall stays a stall: its baseline is gone
	}
	reason := reasonSpin
	switch {
	case !hung && wasOpen:
		return detection{}, false
	case !hung:
		reason = reasonStall
	case spinning == 0:
		reason = reasonHost
	}
	g0 := flat[j.gpus[0]]
	d := detection{gpus: weight, wasteShare: 1, reason: reason}
	f := &d.f
	f.Kind, f.Job, f.ID = schemas.KindHung, j.job, findingID(schemas.KindHung, j.job)
	f.Cluster, f.Team, f.Project, f.Pool = j.cluster, j.team, j.project, j.pool
	f.Node, f.Card, f.GPUUUIDs = g0.node, g0.card, slices.Sorted(slices.Values(j.gpus))
	f.Since = since
	n := float64(sum.samples)
	f.Evidence = evidence(
		"window_minutes", c.Window.Minutes(), "samples", sum.samples, "gpus", weight,
		"flat_fraction", float64(sum.flat)/n, "spinning_fraction", float64(sum.spin)/n, "dead_fraction", float64(sum.dead)/n,
		"engine_active_p50", sum.engineP50, "sm_active_max", sum.smMax, "tensor_active_max", sum.tensorMax,
		"dram_active_max", sum.dramMax, "pcie_bytes_per_s_max", sum.pcieMax, "mem_used_mib", sum.memMin,
		"baseline_sm_active_p50", minBase, "baseline_minutes", c.Baseline.Minutes(),
		"drop_skew_seconds", skew.Seconds(), "hung_minutes", ps.now.Sub(since).Minutes(),
		"power_w_p50", nanIfNone(sum.power, sum.powerN), "baseline_power_w_p50", nanIfNone(sum.basePower, sum.basePowerN),
	)
	if reason == reasonStall {
		return d, true
	}
	if reason == reasonSpin {
		f.Recommendation = fmt.Sprintf("all %d GPU(s) dropped together from SM %.0f%% (p50) to SM ≤ %.0f%% with no tensor, DRAM or PCIe traffic "+
			"while the engine reads %.0f%% busy, for %s: a kernel spinning on a collective that never completes (NCCL deadlock). "+
			"Dump the stacks (py-spy, NCCL_DEBUG=INFO), then restart from the last checkpoint; set a collective timeout",
			len(j.gpus), 100*minBase, 100*c.MaxSM, 100*sum.engineP50, fmtWindow(c.Window))
	} else {
		f.Recommendation = fmt.Sprintf("all %d GPUs dropped together from SM %.0f%% (p50) to nothing, memory still held (%.1f GiB), for %s: "+
			"the host side hung (data loader, storage, a dead rank). Inspect the processes, then restart from the last checkpoint",
			len(j.gpus), 100*minBase, sum.memMin/1024, fmtWindow(c.Window))
	}
	return d, true
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// nanIfNone is x, or NaN (dropped from the evidence: the source cannot say) when
// no sample reported it.
func nanIfNone(x float64, n int64) float64 {
	if n == 0 {
		return math.NaN()
	}
	return x
}
