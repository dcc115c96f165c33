package scheduler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gpupool/gpupool/scheduler/executor"
	"github.com/gpupool/gpupool/schemas"
)

// A finding is evidence, not authority: it says that something looks wrong
// with a job or a process, and the scheduler decides whose that job is and how
// long it has known. Before any policy looks at a finding, resolve fixes its
// job's team, queue and pool from, in this order:
//
//  1. the scheduler's own records: a job it admitted (queued, running or
//     recently finished), or the job it queued for an external one it reclaimed;
//  2. the executor of the job's system (executor.Resolver): the Kubernetes
//     namespace the API server has the pod, Job or Workload in, the Slurm
//     account (or user) and partition scontrol shows, mapped to a team, queue
//     and pool by the executor's configuration;
//  3. for a process (a zombie's PID on a node) whose job the first two cannot
//     resolve, the process executor, when it can say whose the process is.
//
// The team, project and pool the finding claims are ignored; a claim that
// disagrees with the resolved owner is logged and counted. A finding nothing
// resolves is unresolved: a policy may notify about it (matched by the pool it
// claims) and record what it would have done, but nothing destructive is done.
// Policy delays count from when the scheduler first saw the finding, by its own
// clock, never from an earlier Since the finding claims.

// maxResolvesPerPass bounds the executor look-ups one pass makes for findings not
// resolved before: a flood of findings must not become a flood of API calls to
// the clusters. The rest wait for the next pass.
const maxResolvesPerPass = 200

// findingKey names a finding's occurrence: its ID and episode. Each policy step
// acts on an occurrence once.
func findingKey(f *schemas.Finding) string {
	return f.ID + "#" + strconv.FormatUint(uint64(f.Episode), 10)
}

// findingStart is when the condition started by the finding's own account: its
// Since, or its first sighting by the analyzer when it gave none. Policies never
// count from it (see seenFinding.start); pushing a finding with neither is refused.
func findingStart(f *schemas.Finding) time.Time {
	if !f.Since.IsZero() {
		return f.Since
	}
	return f.FirstSeen
}

// SourceOfJob guesses who runs a job from its key's prefix ("k8s/…" → kubernetes,
// "slurm/…", "proc/…" → process, "sched/…" → scheduler), for choosing an executor.
func SourceOfJob(key string) string {
	prefix, _, _ := strings.Cut(key, "/")
	switch prefix {
	case "k8s":
		return schemas.SourceKubernetes
	case "slurm":
		return schemas.SourceSlurm
	case "proc":
		return schemas.SourceProcess
	case "sched":
		return schemas.SourceScheduler
	}
	return ""
}

// resolution is whose a finding's job is, as the scheduler decided it.
type resolution struct {
	// ok: resolved; else why says why not.
	ok  bool
	why string
	// by is who answered: "scheduler" (its own records) or an executor's name.
	by string
	// jobID is the scheduler's job the finding is about ("" for an external job).
	jobID                      string
	team, project, queue, pool string
	// target is the external job (or process) the executor resolved, as its
	// actions will be given it.
	target executor.Target
	detail string
}

// seenFinding is a finding as a pass sees it: resolved, with the time from which
// its policy delays count.
type seenFinding struct {
	f     schemas.Finding
	res   resolution
	start time.Time
}

// policyPool is the pool policies match the finding against: the resolved one,
// or for an unresolved finding the one it claims (only a step that disturbs
// nothing may then be taken).
func (sf *seenFinding) policyPool() string {
	if sf.res.ok {
		return sf.res.pool
	}
	return sf.f.Pool
}

// findingMemo is what the scheduler remembers of each open occurrence: when it
// first saw it, and whose its job was found to be.
type findingMemo struct {
	seen time.Time
	// res is the executor's answer, kept while the occurrence is open (an
	// external job's namespace or account does not change); nil until one came.
	res *resolution
	// claimChecked: a disagreeing claim was counted once.
	claimChecked bool
}

// externalTarget is the external job, or process, a finding names, as the
// executor is given it both to resolve its owner and to act on it.
func externalTarget(f *schemas.Finding) executor.Target {
	t := executor.Target{Job: f.Job, Source: SourceOfJob(f.Job), Cluster: f.Cluster, Node: f.Node, Labels: cloneMap(f.Labels), Finding: f.Kind}
	if f.Job == "" || t.Source == schemas.SourceProcess {
		t.Source, t.PID = schemas.SourceProcess, f.PID
	}
	return t
}

// seeFindings resolves this pass's findings and stamps each with the time the
// scheduler first saw it; occurrences gone from the pass are forgotten. A
// finding whose executor could not answer now (not a refusal: the API is
// down) is left out of this pass.
func (s *Service) seeFindings(ctx context.Context, fs []schemas.Finding, now time.Time) []seenFinding {
	out := make([]seenFinding, 0, len(fs))
	open := make(map[string]bool, len(fs))
	var ask []int          // indexes into out of findings the executors are asked about
	var ext *externalIndex // built on first use, under the lock
	s.mu.Lock()
	for _, f := range fs {
		k := findingKey(&f)
		open[k] = true
		m := s.memo[k]
		if m == nil {
			m = &findingMemo{seen: now}
			s.memo[k] = m
		}
		sf := seenFinding{f: f, start: m.seen}
		if st := findingStart(&f); st.After(sf.start) {
			sf.start = st // a condition said to start later than first seen: the later
		}
		if !s.hasPolicyFor(&f) {
			continue // nothing acts on it: no need to know whose it is
		}
		if res, ok := s.fromRecords(&f, &ext); ok {
			sf.res = res
		} else if m.res != nil {
			sf.res = *m.res
		} else {
			ask = append(ask, len(out))
		}
		out = append(out, sf)
	}
	for k := range s.memo {
		if !open[k] {
			delete(s.memo, k)
		}
	}
	s.mu.Unlock()

	skip := map[int]bool{}
	for n, i := range ask {
		if n >= maxResolvesPerPass || ctx.Err() != nil {
			skip[i] = true
			continue
		}
		res, final := s.fromExecutor(ctx, &out[i].f)
		if !final {
			skip[i] = true
			continue
		}
		out[i].res = res
		s.mu.Lock()
		if m := s.memo[findingKey(&out[i].f)]; m != nil {
			m.res = &res
		}
		s.mu.Unlock()
	}
	kept := out[:0]
	for i := range out {
		if skip[i] {
			continue
		}
		s.checkClaim(&out[i])
		kept = append(kept, out[i])
	}
	return kept
}

// hasPolicyFor reports whether some policy acts on findings of f's kind and
// severity (whatever their pools).
func (s *Service) hasPolicyFor(f *schemas.Finding) bool {
	for i := range s.cfg.Policies {
		p := &s.cfg.Policies[i]
		if p.Finding == f.Kind && (p.MinSeverity == "" || f.Severity.Rank() >= p.MinSeverity.Rank()) {
			return true
		}
	}
	return false
}

// fromRecords resolves f from the scheduler's own jobs: the job it names (by ID
// or attempt key, recently finished ones included), else the queued or running
// job standing for the external job it names (from *ext, which it builds when
// nil). Call with s.mu held, the same hold for every use of *ext.
func (s *Service) fromRecords(f *schemas.Finding, ext **externalIndex) (resolution, bool) {
	if f.Job == "" {
		return resolution{}, false
	}
	j, ok := s.engine.Job(f.Job)
	if !ok || j.State == StateFinished {
		if *ext == nil {
			*ext = newExternalIndex(s.engine)
		}
		if x := (*ext).find(f.Job, f.Labels); x != nil {
			j, ok = x, true
		}
	}
	if !ok {
		return resolution{}, false
	}
	return resolution{ok: true, by: "scheduler", jobID: j.ID, team: j.Spec.Team, project: j.Spec.Project,
		queue: j.Spec.Queue, pool: j.Pool, detail: "job " + j.ID + " of the scheduler"}, true
}

// fromExecutor asks the executors whose f's job (or process) is. final is false
// when the answer should be asked for again later (the executor failed).
func (s *Service) fromExecutor(ctx context.Context, f *schemas.Finding) (res resolution, final bool) {
	unresolved := func(why string) (resolution, bool) { return resolution{why: why}, true }
	var errs []string
	try := func(t executor.Target) (resolution, bool, bool) {
		ex := cmp.Or(s.execs[t.Source], s.execs[""])
		r, ok := ex.(executor.Resolver)
		if ex == nil || !ok {
			errs = append(errs, fmt.Sprintf("no executor that can say whose %s jobs are", cmp.Or(t.Source, "unknown")))
			return resolution{}, false, true
		}
		o, err := r.Owner(ctx, t)
		switch {
		case err == nil:
			res, err := s.fromOwner(o)
			if err != nil {
				errs = append(errs, err.Error())
				return resolution{}, false, true
			}
			res.by, res.target = ex.Name(), t
			return res, true, true
		case errors.Is(err, executor.ErrNotFound), errors.Is(err, executor.ErrUnmapped), errors.Is(err, executor.ErrUnsupported):
			errs = append(errs, err.Error())
			return resolution{}, false, true
		}
		s.log.Warn("resolve a finding's job with its executor; tried again next pass", "finding", f.ID, "job", f.Job, "executor", ex.Name(), "err", err)
		return resolution{}, false, false
	}
	if src := SourceOfJob(f.Job); f.Job != "" && src != schemas.SourceScheduler && (src != schemas.SourceProcess || f.PID == 0) {
		res, ok, final := try(externalTarget(f))
		if ok || !final {
			return res, final
		}
	}
	if f.PID != 0 && f.Node != "" {
		t := externalTarget(f)
		t.Source, t.PID = schemas.SourceProcess, f.PID
		res, ok, final := try(t)
		if ok || !final {
			return res, final
		}
	}
	switch {
	case f.Job == "" && f.PID == 0:
		return unresolved("the finding names no job and no process")
	case SourceOfJob(f.Job) == schemas.SourceScheduler:
		return unresolved("job " + schemas.Clip(f.Job) + " is not one of the scheduler's")
	case len(errs) == 0:
		return unresolved("nothing could say whose job " + schemas.Clip(f.Job) + " is")
	}
	return unresolved(strings.Join(errs, "; "))
}

// fromOwner completes an executor's answer from the model: a queue gives its
// team and pool; a team and pool give the team's queue in that pool. An answer
// with no team for a job, or no pool at all, is no resolution.
func (s *Service) fromOwner(o executor.Owner) (resolution, error) {
	res := resolution{ok: true, team: o.Team, queue: o.Queue, pool: o.Pool, detail: o.Detail}
	if o.Queue != "" {
		q, ok := s.engine.Queue(o.Queue)
		if !ok {
			return resolution{}, fmt.Errorf("%s: mapped to queue %q, which the model does not have", o.Detail, o.Queue)
		}
		res.pool, res.team = q.Pool, cmp.Or(q.Team, o.Team)
		res.project = q.Project
	} else if res.pool != "" {
		if q, ok := s.engine.QueueFor(res.pool, res.team, ""); ok {
			res.queue = q.Name
		}
	}
	if res.pool != "" {
		if _, ok := s.engine.Pool(res.pool); !ok {
			return resolution{}, fmt.Errorf("%s: mapped to pool %q, which the model does not have", o.Detail, res.pool)
		}
	}
	if res.pool == "" && res.team != "" {
		return resolution{}, fmt.Errorf("%s: team %s, but no queue or pool (map it to a queue or a pool)", o.Detail, res.team)
	}
	return res, nil
}

// checkClaim logs and counts, once per occurrence, a finding whose claimed team
// or pool differ from those resolved; the claim is ignored either way.
func (s *Service) checkClaim(sf *seenFinding) {
	f, r := &sf.f, &sf.res
	if !r.ok || (f.Pool == "" || f.Pool == r.pool) && (f.Team == "" || f.Team == r.team) {
		return
	}
	s.mu.Lock()
	m := s.memo[findingKey(f)]
	first := m != nil && !m.claimChecked
	if m != nil {
		m.claimChecked = true
	}
	s.mu.Unlock()
	if !first {
		return
	}
	s.metrics.disagreed()
	s.log.Warn("a finding's claimed owner disagrees with its job's; the claim is ignored", "finding", f.ID, "job", f.Job,
		"claimed_team", schemas.Clip(f.Team), "claimed_pool", schemas.Clip(f.Pool), "team", r.team, "pool", r.pool, "by", r.by)
}
