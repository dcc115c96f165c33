package findings

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/gpupool/gpupool/store"
)

// tenantSQL measures each job's own processes on the GPUs of a detector's jobs: how
// many of their samples showed SM or memory-bandwidth activity of their own, how
// many the source could say nothing about, and the memory they held over
// the window (MiB × samples: the memory-time chargeback splits a shared GPU by).
// The GPU's card and MIG profile come from its samples.
//
// A process row without sm_util is read as the source means it
// (docs/analyzer.md, "What the sources can tell"): when another process on the
// same GPU has a figure in the same tick, the source was sampling per process
// and this one appeared in no sample — NVML's nvmlDeviceGetProcessUtilization
// lists only processes that ran kernels since the timestamp — so it ran nothing
// (0, counted inactive). Only a tick in which no process of the GPU has a figure
// (a MIG instance, a driver without per-process accounting) is "cannot say". The
// figure that shows per-process sampling must be a job's own: under MPS, NVML
// reports the clients' work as the MPS server's (nvidia-cuda-mps-server, which
// no job owns), and the clients' absent figures then say nothing about them.
const tenantSQL = `
SELECT p.gpu_uuid AS gpu_uuid, p.job AS job, p.node AS node, p.samples AS samples, p.active AS active,
       p.util_missing AS util_missing, p.mem_used_mib AS mem_used_mib, p.mem_time AS mem_time, p.span_ms AS span_ms,
       g.card AS card, g.mig_profile AS mig_profile
FROM (
    SELECT gpu_uuid, job, any(node) AS node, count() AS samples,
           countIf(greatest(coalesce(sm_util, 0), coalesce(mem_util, 0)) >= {active:Float64}) AS active,
           countIf(sm_util IS NULL AND (gpu_uuid, ts) NOT IN (
               SELECT gpu_uuid, ts FROM process_samples
               WHERE ts > {from:DateTime64(3, 'UTC')} AND ts <= {to:DateTime64(3, 'UTC')}
                 AND gpu_uuid IN {gpus:Array(String)} AND sm_util IS NOT NULL
                 AND job != '' AND process_name != 'nvidia-cuda-mps-server')) AS util_missing,
           max(fb_used_mib) AS mem_used_mib,
           sum(toFloat64(fb_used_mib)) AS mem_time,
           dateDiff('millisecond', min(ts), max(ts)) AS span_ms
    FROM process_samples
    WHERE ts > {from:DateTime64(3, 'UTC')} AND ts <= {to:DateTime64(3, 'UTC')}
      AND gpu_uuid IN {gpus:Array(String)}
    GROUP BY gpu_uuid, job
) AS p
LEFT JOIN (
    SELECT gpu_uuid, any(card) AS card, any(mig_profile) AS mig_profile
    FROM gpu_samples
    WHERE ts > {from:DateTime64(3, 'UTC')} AND ts <= {to:DateTime64(3, 'UTC')} AND gpu_uuid IN {gpus:Array(String)}
    GROUP BY gpu_uuid
) AS g ON p.gpu_uuid = g.gpu_uuid`

// sharedSQL lists the GPUs among {gpus} that processes of two or more jobs used
// during the window: tenantSQL, which reads every process row of a GPU twice, is
// asked only about those and the GPUs several running jobs hold, so a fleet
// whose GPUs are mostly one job's each pays one cheap read for them.
const sharedSQL = `
SELECT gpu_uuid
FROM process_samples
WHERE ts > {from:DateTime64(3, 'UTC')} AND ts <= {to:DateTime64(3, 'UTC')}
  AND gpu_uuid IN {gpus:Array(String)} AND job != ''
GROUP BY gpu_uuid
HAVING min(job) != max(job)`

// tenantSet is what the idle detector knows of shared GPUs: how many running jobs
// hold each GPU, and each (job, GPU) tenant's own activity.
type tenantSet struct {
	// holders are the running jobs (of every pool) holding each GPU.
	holders map[string][]string
	// shared marks the GPUs judged per tenant: held by two running jobs now, or
	// with processes of two jobs in the window (a neighbour that left during it
	// still colours the GPU's samples).
	shared map[string]bool
	// rows is each tenant's activity, by job and GPU; gpu is each shared GPU's
	// node, card and profile.
	rows map[[2]string]tenantRow
	gpu  map[string]idleGPU
	cfg  SharedConfig
	// minSpanMs and minSamples are the coverage a tenant's samples need.
	minSpanMs, minSamples int64
}

type tenantRow struct {
	samples, active, missing, spanMs int64
	mem, memTime                     float64
}

// queryTenants reads the tenants of the shared GPUs of set's jobs; none when no
// GPU of theirs is shared.
func (a *Analyzer) queryTenants(ctx context.Context, ps *pass, set jobSet, sc SharedConfig, from time.Time) (tenantSet, error) {
	ts := tenantSet{shared: map[string]bool{}, rows: map[[2]string]tenantRow{}, gpu: map[string]idleGPU{}, cfg: sc,
		minSpanMs: time.Duration(float64(ps.now.Sub(from)) * a.cfg.MinCoverage).Milliseconds(), minSamples: int64(a.cfg.MinSamples)}
	if !sc.Enabled {
		return ts, nil // judged as whole GPUs
	}
	ts.holders = ps.holders
	if len(set.gpus) == 0 {
		return ts, nil
	}
	p := store.Params{"from": tsParam(from), "to": tsParam(ps.now), "gpus": arrayParam(set.gpus)}
	res, err := a.q.Query(ctx, sharedSQL, p)
	if err != nil {
		return ts, fmt.Errorf("idle: shared GPUs: %w", err)
	}
	r := rowReader{res: res}
	for i := range res.Rows {
		ts.shared[r.str(i, "gpu_uuid")] = true
	}
	if r.err != nil {
		return ts, fmt.Errorf("idle: shared GPUs: read result: %w", r.err)
	}
	var shared []string
	for _, u := range set.gpus {
		if len(ts.holders[u]) >= 2 {
			ts.shared[u] = true
		}
		if ts.shared[u] {
			shared = append(shared, u)
		}
	}
	slices.Sort(shared)
	shared = slices.Compact(shared)
	if len(shared) == 0 {
		return ts, nil
	}
	p["gpus"], p["active"] = arrayParam(shared), floatParam(sc.ActiveThreshold)
	if res, err = a.q.Query(ctx, tenantSQL, p); err != nil {
		return ts, fmt.Errorf("idle: shared GPUs: %w", err)
	}
	r = rowReader{res: res}
	for i := range res.Rows {
		u := r.str(i, "gpu_uuid")
		ts.rows[[2]string{r.str(i, "job"), u}] = tenantRow{
			samples: r.int(i, "samples"), active: r.int(i, "active"), missing: r.int(i, "util_missing"),
			spanMs: r.int(i, "span_ms"), mem: r.float(i, "mem_used_mib"), memTime: r.float(i, "mem_time"),
		}
		ts.gpu[u] = idleGPU{node: r.str(i, "node"), card: r.str(i, "card"), mig: r.str(i, "mig_profile")}
	}
	if r.err != nil {
		return ts, fmt.Errorf("idle: shared GPUs: read result: %w", r.err)
	}
	return ts, nil
}

// idleTenant reports whether job is an idle tenant of shared GPU u, as an idleGPU
// of its own samples. It is judged by the samples the source could say something
// about; a tenant most of whose samples the source cannot say anything about (no
// per-process figure on the GPU in that tick) is idle only when the whole GPU is
// (its neighbours' activity cannot be told from its own). A few such ticks — a
// neighbour's line lost or late — do not hide an idle tenant.
func (ts tenantSet) idleTenant(job, u string, idle map[string]idleGPU) (idleGPU, bool) {
	t, ok := ts.rows[[2]string{job, u}]
	if !ok || t.samples < ts.minSamples || t.spanMs < ts.minSpanMs {
		return idleGPU{}, false
	}
	g := ts.gpu[u]
	known := t.samples - t.missing
	if known*2 < t.samples || known < ts.minSamples {
		whole, ok := idle[u]
		return whole, ok
	}
	if float64(t.active) > ts.cfg.MaxActiveFraction*float64(known) {
		return idleGPU{}, false
	}
	g.samples, g.active, g.mem = t.samples, t.active, t.mem
	return g, true
}

// memoryShare is job's share of shared GPU u as chargeback splits it by default
// (chargeback_settings' shared_split 'memory'): the memory-time its processes
// held over the window out of all its running holders', or 1/n when none held
// memory. The idle-tenant finding's waste is this share, so it is the money
// chargeback bills the tenant as idle. Under the 'activity' split chargeback
// bills an idle tenant almost nothing; the finding still counts the memory it
// holds, the capacity it denies its neighbours (docs/analyzer.md).
func (ts tenantSet) memoryShare(job, u string) float64 {
	n := max(len(ts.holders[u]), 1)
	total := 0.0
	for _, h := range ts.holders[u] {
		total += ts.rows[[2]string{h, u}].memTime
	}
	if total <= 0 {
		return 1 / float64(n)
	}
	return ts.rows[[2]string{job, u}].memTime / total
}
