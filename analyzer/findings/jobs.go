package findings

import (
	"context"
	"fmt"
	"time"

	"github.com/gpupool/gpupool/store"
)

// runningJob is a job holding GPUs at the pass time, with its owner.
type runningJob struct {
	job, cluster, team, project, pool string
	gpus                              []string
	start                             time.Time
}

// runningSQL lists the jobs holding GPUs at {to}. End times after {to} count as
// running, so a pass over a past time sees the fleet as it was then (the scoring
// harness and a replayed trace depend on it). The jobs view groups every job
// event, so a pass reads it once here and hands the job → GPU pairs to the
// detectors' queries as array parameters, rather than each query grouping it again.
const runningSQL = `
SELECT job, cluster, team, project, pool, gpu_uuids, start_time
FROM jobs
WHERE start_time IS NOT NULL AND start_time <= {to:DateTime64(3, 'UTC')}
  AND (end_time IS NULL OR end_time > {to:DateTime64(3, 'UTC')})
  AND notEmpty(gpu_uuids)
ORDER BY job`

// loadRunning reads the jobs running at the pass time.
func (a *Analyzer) loadRunning(ctx context.Context, now time.Time) ([]runningJob, error) {
	res, err := a.q.Query(ctx, runningSQL, store.Params{"to": tsParam(now)})
	if err != nil {
		return nil, err
	}
	r := rowReader{res: res}
	out := make([]runningJob, 0, len(res.Rows))
	for i := range res.Rows {
		out = append(out, runningJob{
			job: r.str(i, "job"), cluster: r.str(i, "cluster"), team: r.str(i, "team"), project: r.str(i, "project"),
			pool: r.str(i, "pool"), gpus: r.strings(i, "gpu_uuids"), start: r.time(i, "start_time"),
		})
	}
	if r.err != nil {
		return nil, fmt.Errorf("read running jobs: %w", r.err)
	}
	return out, nil
}

// jobSet is the running jobs one detector query judges: those of a pool group that
// held their GPUs since a time.
type jobSet struct {
	byKey map[string]*runningJob
	// jobs and gpus are parallel: one entry per (job, GPU) pair.
	jobs, gpus []string
}

// selectJobs returns the jobs of group that started by heldSince.
func selectJobs[T any](running []runningJob, g poolGroup[T], heldSince time.Time) jobSet {
	s := jobSet{byKey: map[string]*runningJob{}}
	for i := range running {
		j := &running[i]
		if !g.has(j.pool) || j.start.After(heldSince) {
			continue
		}
		s.byKey[j.job] = j
		for _, u := range j.gpus {
			s.jobs, s.gpus = append(s.jobs, j.job), append(s.gpus, u)
		}
	}
	return s
}

// without returns the set less the jobs drop selects.
func (s jobSet) without(drop func(*runningJob) bool) jobSet {
	out := jobSet{byKey: map[string]*runningJob{}}
	for i, key := range s.jobs {
		j := s.byKey[key]
		if drop(j) {
			continue
		}
		out.byKey[key] = j
		out.jobs, out.gpus = append(out.jobs, key), append(out.gpus, s.gpus[i])
	}
	return out
}

// params adds the set's job and GPU arrays to p.
func (s jobSet) params(p store.Params) store.Params {
	p["jobs"], p["gpus"] = arrayParam(s.jobs), arrayParam(s.gpus)
	return p
}

// jobGPUs is the SQL table of a jobSet's (job, GPU) pairs.
const jobGPUs = `(SELECT tupleElement(jg, 1) AS job, tupleElement(jg, 2) AS gpu_uuid
      FROM (SELECT arrayJoin(arrayZip({jobs:Array(String)}, {gpus:Array(String)})) AS jg))`
