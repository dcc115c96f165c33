package findings

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
)

// zombieSQL finds processes holding GPU memory with no activity, in two ways:
//
//   - orphan: no job key, a key no scheduler reported, or a job that had ended
//     before the orphan window began, while the process held memory with no
//     activity through the window (a teardown shorter than the window is never
//     flagged);
//   - inactive: a process of a running job that held memory through the whole
//     inactive window without any activity at all.
//
// An orphan's activity is its own sm_util when its source reports it (a new job
// may share the GPU), else its GPU's engine activity; but a process of an ended
// job on a GPU another job's processes now use is a zombie whatever the GPU does
// (the GPU's activity is the new tenant's): without a figure of its own, its
// absence of activity is the signal. A running job's process must
// show none and neither may its GPU: "no activity at all". A process must still be
// there (a sample at the end of the window).
//
// The candidates (candidatesSQL) are found first, so the long look-back reads only
// their GPUs' rows (a filter on the LowCardinality GPU column, evaluated on its
// dictionary). A process is keyed by GPU, PID and job: the GPU names the node and
// cluster, and grouping by fewer string keys is several times faster. Unattributed
// processes have pool "" and are judged with the group that holds "" (the default
// group).
var zombieSQL = `
SELECT
    p.cluster AS cluster, p.node AS node, p.gpu_uuid AS gpu_uuid, p.pid AS pid, p.job AS job,
    p.process_name AS process_name, p.samples AS samples, p.mem_now AS mem_used_mib, p.sm_max AS sm_util_max,
    p.first_ts AS first_ts,
    j.known AS known, j.team AS team, j.project AS project, j.pool AS pool, j.end_time AS end_time,
    g.card AS card, g.mig_profile AS mig_profile, g.gpu_max AS gpu_active_max,
    arrayFilter(x -> x != p.job, o.gpu_jobs) AS other_jobs,
    multiIf(p.job = '', 'unattributed', j.known = 0, 'unknown_job',
            j.end_time IS NOT NULL AND j.end_time <= {to:DateTime64(3, 'UTC')}, 'job_ended', 'inactive') AS reason,
    if(reason = 'job_ended', greatest(assumeNotNull(j.end_time), p.first_ts), p.first_ts) AS since
FROM (
    SELECT
        gpu_uuid, pid, job, any(cluster) AS cluster, any(node) AS node,
        any(process_name) AS process_name,
        count() AS samples,
        min(ts) AS first_ts, max(ts) AS last_ts,
        minIf(ts, ts > {recent_from:DateTime64(3, 'UTC')}) AS recent_first_ts,
        max(coalesce(sm_util, 0)) AS sm_max,
        maxIf(coalesce(sm_util, 0), ts > {recent_from:DateTime64(3, 'UTC')}) AS recent_sm_max,
        countIf(sm_util IS NULL) AS util_missing,
        min(fb_used_mib) AS mem_min,
        minIf(fb_used_mib, ts > {recent_from:DateTime64(3, 'UTC')}) AS recent_mem_min,
        argMax(fb_used_mib, ts) AS mem_now
    FROM process_samples
    WHERE ts > {from:DateTime64(3, 'UTC')} AND ts <= {to:DateTime64(3, 'UTC')}
      AND gpu_uuid IN {cand_gpus:Array(String)}
    GROUP BY gpu_uuid, pid, job
    HAVING last_ts >= {fresh:DateTime64(3, 'UTC')} AND recent_mem_min >= {min_mem:UInt32}
       AND (util_missing > 0 OR recent_sm_max <= {active:Float64})
) AS p
LEFT JOIN (
    SELECT job, toUInt8(1) AS known, team, project, pool, end_time
    FROM jobs
    WHERE job IN {cand_jobs:Array(String)}
) AS j ON p.job = j.job
LEFT JOIN (
    SELECT
        gpu_uuid, any(card) AS card, any(mig_profile) AS mig_profile,
        max(` + activeExpr + `) AS gpu_max,
        maxIf(` + activeExpr + `, ts > {recent_from:DateTime64(3, 'UTC')}) AS recent_gpu_max
    FROM gpu_samples
    WHERE ts > {from:DateTime64(3, 'UTC')} AND ts <= {to:DateTime64(3, 'UTC')}
      AND gpu_uuid IN {cand_gpus:Array(String)}
    GROUP BY gpu_uuid
) AS g ON p.gpu_uuid = g.gpu_uuid
LEFT JOIN (
    SELECT gpu_uuid, groupUniqArrayIf(job, job != '') AS gpu_jobs
    FROM process_samples
    WHERE ts > {recent_from:DateTime64(3, 'UTC')} AND ts <= {to:DateTime64(3, 'UTC')}
      AND gpu_uuid IN {cand_gpus:Array(String)}
    GROUP BY gpu_uuid
) AS o ON p.gpu_uuid = o.gpu_uuid
WHERE has({pools:Array(String)}, j.pool) = {in_pools:Bool}
  AND (
    (reason IN ('unattributed', 'unknown_job')
        OR (reason = 'job_ended' AND j.end_time <= {recent_from:DateTime64(3, 'UTC')}))
    AND p.recent_first_ts <= {recent_cover:DateTime64(3, 'UTC')}
    AND if(p.util_missing > 0, if(reason = 'job_ended' AND notEmpty(other_jobs), 0, g.recent_gpu_max), p.recent_sm_max) <= {active:Float64}
  OR
    reason = 'inactive'
    AND p.first_ts <= {long_cover:DateTime64(3, 'UTC')} AND p.mem_min >= {min_mem:UInt32}
    AND g.gpu_max <= {active:Float64} AND (p.util_missing > 0 OR p.sm_max <= {active:Float64})
  )
ORDER BY cluster, node, gpu_uuid, pid`

// candidatesSQL finds the processes that may be zombies: holding memory now with no
// activity over the orphan window (zombies and the processes of idle jobs). It
// reads minutes of samples; in a healthy fleet it finds none and the look-back
// query is not run at all.
const candidatesSQL = `
SELECT gpu_uuid, pid, groupUniqArray(job) AS jobs
FROM process_samples
WHERE ts > {recent_from:DateTime64(3, 'UTC')} AND ts <= {to:DateTime64(3, 'UTC')}
GROUP BY gpu_uuid, pid
HAVING max(ts) >= {fresh:DateTime64(3, 'UTC')} AND min(fb_used_mib) >= {min_mem:UInt32}
   AND (countIf(sm_util IS NULL) > 0 OR max(coalesce(sm_util, 0)) <= {active:Float64})`

// zombieReasons says in words why a process is a zombie.
var zombieReasons = map[string]string{
	"unattributed": "holds GPU memory with no activity and belongs to no job any scheduler knows",
	"unknown_job":  "holds GPU memory with no activity and its job key is unknown to every scheduler",
	"job_ended":    "holds GPU memory with no activity after its job ended",
	"inactive":     "has held GPU memory with no activity at all",
}

// detectZombies finds zombie processes, one query per group of pools sharing
// zombie settings.
func (a *Analyzer) detectZombies(ctx context.Context, ps *pass) ([]detection, error) {
	var out []detection
	groups := poolGroups(a.cfg, func(t Thresholds) ZombieConfig { return t.Zombie }, func(c ZombieConfig) bool { return c.Enabled })
	slack := 1 - a.cfg.MinCoverage
	for _, g := range groups {
		c := g.cfg
		recentFrom := ps.now.Add(-c.OrphanWindow)
		from := ps.now.Add(-max(c.OrphanWindow, c.InactiveWindow))
		p := g.params(store.Params{
			"from": tsParam(from), "to": tsParam(ps.now), "recent_from": tsParam(recentFrom),
			"fresh":        tsParam(ps.now.Add(-time.Duration(slack * float64(c.OrphanWindow)))),
			"recent_cover": tsParam(recentFrom.Add(time.Duration(slack * float64(c.OrphanWindow)))),
			"long_cover":   tsParam(ps.now.Add(-c.InactiveWindow).Add(time.Duration(slack * float64(c.InactiveWindow)))),
			"min_mem":      strconv.FormatUint(uint64(c.MinMemMiB), 10),
			"active":       floatParam(c.ActiveThreshold),
		})
		cand, err := a.q.Query(ctx, candidatesSQL, p)
		if err != nil {
			return nil, fmt.Errorf("zombie: candidates: %w", err)
		}
		if len(cand.Rows) == 0 {
			continue
		}
		gpus, jobs := map[string]bool{}, map[string]bool{}
		cr := rowReader{res: cand}
		for i := range cand.Rows {
			gpus[cr.str(i, "gpu_uuid")] = true
			for _, j := range cr.strings(i, "jobs") {
				jobs[j] = true
			}
		}
		if cr.err != nil {
			return nil, fmt.Errorf("zombie: candidates: %w", cr.err)
		}
		p["cand_gpus"], p["cand_jobs"] = arrayParam(slices.Sorted(maps.Keys(gpus))), arrayParam(slices.Sorted(maps.Keys(jobs)))
		res, err := a.q.Query(ctx, zombieSQL, p)
		if err != nil {
			return nil, fmt.Errorf("zombie: %w", err)
		}
		r := rowReader{res: res}
		for i := range res.Rows {
			mig := r.str(i, "mig_profile")
			reason := r.str(i, "reason")
			d := detection{gpus: unitWeight(mig), wasteShare: 1, reason: reason}
			f := &d.f
			f.Kind = schemas.KindZombie
			f.Cluster, f.Node, f.Job = r.str(i, "cluster"), r.str(i, "node"), r.str(i, "job")
			f.PID = uint32(r.int(i, "pid"))
			gpu := r.str(i, "gpu_uuid")
			f.GPUUUIDs = []string{gpu}
			f.ID = findingID(schemas.KindZombie, f.Cluster, f.Node, gpu, strconv.FormatUint(uint64(f.PID), 10), f.Job)
			f.Team, f.Project, f.Pool, f.Card = r.str(i, "team"), r.str(i, "project"), r.str(i, "pool"), r.str(i, "card")
			f.Since = r.time(i, "since")
			window := c.OrphanWindow
			if reason == schemas.ReasonInactive {
				window = c.InactiveWindow
			}
			kv := []any{
				"window_minutes", window.Minutes(), "samples", r.int(i, "samples"), "gpus", d.gpus,
				"mem_used_mib", r.float(i, "mem_used_mib"), "sm_util_max", r.float(i, "sm_util_max"),
				"gpu_active_max", r.float(i, "gpu_active_max"), "pid", f.PID,
				"job_known", boolFloat(r.int(i, "known") == 1), "job_ended", boolFloat(reason == "job_ended"),
				// Capped at the look-back: how long it has been seen, as far as
				// this pass read.
				"seen_minutes", ps.now.Sub(r.time(i, "first_ts")).Minutes(),
			}
			if reason == "job_ended" {
				kv = append(kv, "minutes_since_job_end", ps.now.Sub(r.time(i, "end_time")).Minutes())
			}
			others := r.strings(i, "other_jobs")
			if len(others) > 0 {
				// The memory it holds is denied to the GPU's new tenant(s).
				kv = append(kv, "other_tenants", len(others), "denied_mem_mib", r.float(i, "mem_used_mib"))
			}
			f.Evidence = evidence(kv...)
			f.Recommendation = fmt.Sprintf("process %d (%s) on %s %s for %s: kill it to free the GPU",
				f.PID, r.str(i, "process_name"), f.Node, zombieReasons[reason], fmtWindow(window))
			if len(others) > 0 {
				slices.Sort(others)
				f.Recommendation = fmt.Sprintf("process %d (%s) on %s %s for %s, and denies %.1f GiB to %s now on the GPU: kill it",
					f.PID, r.str(i, "process_name"), f.Node, zombieReasons[reason], fmtWindow(window),
					r.float(i, "mem_used_mib")/1024, strings.Join(others, ", "))
			}
			out = append(out, d)
		}
		if r.err != nil {
			return nil, fmt.Errorf("zombie: read result: %w", r.err)
		}
	}
	return out, nil
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
