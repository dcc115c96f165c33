package findings

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
)

// detection is what a detector saw at one pass: the finding's identity and
// evidence, and what its waste is made of. The lifecycle adds the rest.
type detection struct {
	f schemas.Finding
	// gpus is the GPU-equivalents concerned (a MIG instance counts slices / 7).
	gpus float64
	// wasteShare is the share of those GPUs' hours that is waste: 1 for idle and
	// zombie, the price saving for wrong_card and memory_capacity, what a
	// better-fed job would have saved for memory_bound and low_util.
	wasteShare float64
	// reason is why a zombie is one: unattributed, unknown_job, job_ended or
	// inactive.
	reason string
}

// idleSQL judges the GPUs of the jobs that held them through the window: the share
// of samples with engine activity and the share with DRAM or PCIe traffic. It
// returns the idle GPUs whose samples span the window; a job is idle when every
// one of its GPUs is (a job using one GPU of eight is not idle, it is oversized).
var idleSQL = `
SELECT
    gpu_uuid, any(node) AS node, any(card) AS card, any(mig_profile) AS mig_profile,
    count() AS samples,
    countIf(` + activeExpr + ` >= {active:Float64}) AS active,
    countIf(coalesce(dram_active, 0) >= {dram:Float64}
         OR coalesce(pcie_rx_bytes_per_s, 0) + coalesce(pcie_tx_bytes_per_s, 0) >= {pcie:Float64}) AS traffic,
    max(fb_used_mib) AS mem_used_mib,
    max(` + activeExpr + `) AS active_max,
    quantileBFloat16(0.5)(coalesce(dram_active, 0)) AS dram_active_p50,
    quantileBFloat16(0.5)(coalesce(pcie_rx_bytes_per_s, 0) + coalesce(pcie_tx_bytes_per_s, 0)) AS pcie_bytes_per_s_p50,
    dateDiff('millisecond', min(ts), max(ts)) AS span_ms
FROM gpu_samples
WHERE ts > {from:DateTime64(3, 'UTC')} AND ts <= {to:DateTime64(3, 'UTC')}
  AND gpu_uuid IN {gpus:Array(String)}
GROUP BY gpu_uuid
HAVING span_ms >= {min_span_ms:Int64} AND samples >= {min_samples:UInt64}
   AND active / samples <= {max_active:Float64} AND traffic / samples <= {max_traffic:Float64}`

// idleGPU is one row of idleSQL.
type idleGPU struct {
	node, card, mig                  string
	samples, active, traffic         int64
	mem, activeMax, dramP50, pcieP50 float64
}

// idleSettings are what the idle detector groups pools by: its own settings and
// the shared-GPU ones.
type idleSettings struct {
	IdleConfig
	shared SharedConfig
}

// detectIdle finds idle jobs, one query per group of pools sharing idle settings.
func (a *Analyzer) detectIdle(ctx context.Context, ps *pass) ([]detection, error) {
	var out []detection
	groups := poolGroups(a.cfg, func(t Thresholds) idleSettings { return idleSettings{t.Idle, t.Shared} },
		func(c idleSettings) bool { return c.Enabled })
	for _, g := range groups {
		c := g.cfg
		from := ps.now.Add(-c.Window)
		set := selectJobs(ps.running, g, from)
		if len(set.gpus) == 0 {
			continue
		}
		res, err := a.q.Query(ctx, idleSQL, set.params(store.Params{
			"from": tsParam(from), "to": tsParam(ps.now),
			"active": floatParam(c.ActiveThreshold), "dram": floatParam(c.DRAMThreshold), "pcie": floatParam(c.PCIeBytesPerS),
			"max_active": floatParam(c.MaxActiveFraction), "max_traffic": floatParam(c.MaxTrafficFraction),
			"min_span_ms": durMsParam(time.Duration(float64(c.Window) * a.cfg.MinCoverage)),
			"min_samples": intParam(int64(a.cfg.MinSamples)),
		}))
		if err != nil {
			return nil, fmt.Errorf("idle: %w", err)
		}
		r := rowReader{res: res}
		idle := make(map[string]idleGPU, len(res.Rows))
		for i := range res.Rows {
			idle[r.str(i, "gpu_uuid")] = idleGPU{
				node: r.str(i, "node"), card: r.str(i, "card"), mig: r.str(i, "mig_profile"),
				samples: r.int(i, "samples"), active: r.int(i, "active"), traffic: r.int(i, "traffic"),
				mem: r.float(i, "mem_used_mib"), activeMax: r.float(i, "active_max"),
				dramP50: r.float(i, "dram_active_p50"), pcieP50: r.float(i, "pcie_bytes_per_s_p50"),
			}
		}
		if r.err != nil {
			return nil, fmt.Errorf("idle: read result: %w", r.err)
		}
		tenants, err := a.queryTenants(ctx, ps, set, g.cfg.shared, from)
		if err != nil {
			return nil, err
		}
		for _, key := range slices.Sorted(maps.Keys(set.byKey)) {
			if d, ok := idleJob(set.byKey[key], idle, tenants, c.IdleConfig, from); ok {
				out = append(out, d)
			}
		}
	}
	return out, nil
}

// idleJob returns the finding for job j if every one of its GPUs is idle: a GPU
// of its own by the GPU's samples, a GPU it shares with other running jobs by its
// own processes' activity (tenantIdle), counting its share of that GPU.
func idleJob(j *runningJob, idle map[string]idleGPU, ts tenantSet, c IdleConfig, from time.Time) (detection, bool) {
	var sum idleGPU
	weight, maxActive := 0.0, 0.0
	shared, tenantsMax := 0, 0
	sharedUnits, sharedWeight := 0.0, 0.0
	for _, u := range j.gpus {
		if ts.shared[u] {
			n := max(len(ts.holders[u]), 1)
			gi, ok := ts.idleTenant(j.job, u, idle)
			if !ok {
				return detection{}, false
			}
			shared, tenantsMax = shared+1, max(tenantsMax, n)
			share := ts.memoryShare(j.job, u)
			weight += unitWeight(gi.mig) * share
			sharedUnits, sharedWeight = sharedUnits+unitWeight(gi.mig), sharedWeight+unitWeight(gi.mig)*share
			maxActive = max(maxActive, float64(gi.active)/float64(gi.samples))
			sum.samples, sum.active, sum.traffic = sum.samples+gi.samples, sum.active+gi.active, sum.traffic+gi.traffic
			sum.mem = max(sum.mem, gi.mem)
			continue
		}
		gi, ok := idle[u]
		if !ok {
			return detection{}, false
		}
		weight += unitWeight(gi.mig)
		maxActive = max(maxActive, float64(gi.active)/float64(gi.samples))
		sum.samples, sum.active, sum.traffic = sum.samples+gi.samples, sum.active+gi.active, sum.traffic+gi.traffic
		sum.mem, sum.activeMax = max(sum.mem, gi.mem), max(sum.activeMax, gi.activeMax)
		sum.dramP50, sum.pcieP50 = max(sum.dramP50, gi.dramP50), max(sum.pcieP50, gi.pcieP50)
	}
	first, ok := idle[j.gpus[0]]
	if !ok {
		first = ts.gpu[j.gpus[0]]
	}
	d := detection{gpus: weight, wasteShare: 1}
	f := &d.f
	f.Kind, f.Job, f.ID = schemas.KindIdle, j.job, findingID(schemas.KindIdle, j.job)
	f.Cluster, f.Team, f.Project, f.Pool = j.cluster, j.team, j.project, j.pool
	f.Node, f.Card, f.GPUUUIDs = first.node, first.card, slices.Sorted(slices.Values(j.gpus))
	f.Since = from
	f.Evidence = evidence(
		"window_minutes", c.Window.Minutes(), "samples", sum.samples, "gpus", weight,
		"active_fraction", float64(sum.active)/float64(sum.samples), "traffic_fraction", float64(sum.traffic)/float64(sum.samples),
		"max_gpu_active_fraction", maxActive, "active_threshold", c.ActiveThreshold, "active_max", sum.activeMax,
		"mem_used_mib", sum.mem, "dram_active_p50", sum.dramP50, "pcie_bytes_per_s_p50", sum.pcieP50,
	)
	f.Recommendation = fmt.Sprintf("GPUs active in %.1f%% of the last %s (threshold %.0f%%) with no data traffic: "+
		"stop the job or release its GPUs; they can be reclaimed",
		100*f.Evidence["active_fraction"], fmtWindow(c.Window), 100*c.MaxActiveFraction)
	if shared > 0 {
		f.Evidence["shared_gpus"], f.Evidence["tenants"] = float64(shared), float64(tenantsMax)
		f.Evidence["memory_share"] = sharedWeight / sharedUnits
		f.Recommendation = fmt.Sprintf("its own processes were active in %.1f%% of the last %s (threshold %.0f%%) on %d GPU(s) it shares "+
			"with up to %d other job(s), holding %.1f GiB (%.0f%% of their memory, the share it is billed): an idle tenant; "+
			"stop it or release its share, which can be reclaimed",
			100*f.Evidence["active_fraction"], fmtWindow(c.Window), 100*c.MaxActiveFraction, shared, tenantsMax-1, sum.mem/1024,
			100*f.Evidence["memory_share"])
	}
	return d, true
}

// fmtWindow prints a window as people write it: "30m", "2h", "1h30m".
func fmtWindow(d time.Duration) string {
	s := d.String()
	for _, suffix := range []string{"m0s", "h0m"} {
		if len(s) > len(suffix) && s[len(s)-len(suffix):] == suffix {
			s = s[:len(s)-len(suffix)+1]
		}
	}
	return s
}
