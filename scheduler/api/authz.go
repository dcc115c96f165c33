package api

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/gpupool/gpupool/auth"
	"github.com/gpupool/gpupool/scheduler"
)

// Who may call what. A route's rule lets a role in at all; a team's calls are
// then scoped to its own jobs and audit rows by the handler (403 for another
// team's). Queues and the model are read-only and whole for every reader: which
// queue a job waits in, and why, depends on the cohort's use, which a team needs
// to see to understand its waits. Findings come only from the analyzer (and
// admin): a forged one would turn into reclaims and kills of others' work.
var (
	// readAll sees every job, queue and audit row.
	readAll = auth.AnyRole(auth.RoleAdmin, auth.RoleOperator, auth.RoleFinance)
	// writeAll submits, finishes and cancels any team's jobs.
	writeAll = auth.AnyRole(auth.RoleAdmin, auth.RoleOperator)
	readers  = auth.AnyRole(auth.RoleAdmin, auth.RoleOperator, auth.RoleFinance, auth.RoleAnyTeam)
	writers  = auth.AnyRole(auth.RoleAdmin, auth.RoleOperator, auth.RoleAnyTeam)
	pushers  = auth.AnyRole(auth.RoleAdmin, auth.RoleAnalyzer)
)

// route is one endpoint, who may call it and what serves it.
type route struct {
	pattern string
	rule    auth.Rule
	serve   http.HandlerFunc
}

func (h *handler) routes() []route {
	return []route{
		{"GET /v1/queues", readers, h.queues},
		{"GET /v1/model", readers, h.model},
		{"GET /v1/fragmentation", readers, h.fragmentation},
		{"POST /v1/jobs", writers, h.submit},
		{"GET /v1/jobs", readers, h.jobs},
		{"GET /v1/jobs/{id...}", readers, h.job},
		{"POST /v1/jobs/{id...}", writers, h.finish},
		{"DELETE /v1/jobs/{id...}", writers, h.cancel},
		{"POST /v1/resume/{id...}", writers, h.resume},
		{"GET /v1/actions", readers, h.actions},
		{"POST /v1/findings", pushers, h.findings},
	}
}

// caller is the identity the guard authenticated.
func caller(r *http.Request) auth.Identity {
	id, _ := auth.FromContext(r.Context())
	return id
}

// actorContext is the request's context carrying the caller as the audit
// trail's actor.
func actorContext(r *http.Request) context.Context {
	return scheduler.ContextWithActor(r.Context(), caller(r).String())
}

// teamJobs lists the jobs f selects among those of teams (f.Team, when set, is
// one of them), in the backend's order, at most f.Limit.
func teamJobs(b Backend, f scheduler.JobFilter, teams []string) []scheduler.Job {
	switch {
	case f.Team != "":
		return b.Jobs(f)
	case len(teams) == 1:
		f.Team = teams[0]
		return b.Jobs(f)
	}
	limit := f.Limit
	f.Limit = 0
	var out []scheduler.Job
	for _, j := range b.Jobs(f) {
		if slices.Contains(teams, j.Spec.Team) {
			out = append(out, j)
		}
	}
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

// teamActions reads the audit rows f selects among those of teams (f.Team, when
// set, is one of them), oldest first, the newest f.Limit.
func teamActions(ctx context.Context, b Backend, f scheduler.ActionFilter, teams []string) ([]scheduler.Action, error) {
	if f.Team != "" {
		teams = []string{f.Team}
	}
	var out []scheduler.Action
	for _, t := range teams {
		f.Team = t
		rows, err := b.Actions(ctx, f)
		if err != nil {
			return nil, err
		}
		out = append(out, rows...)
	}
	slices.SortStableFunc(out, func(a, b scheduler.Action) int { return a.Time.Compare(b.Time) })
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[len(out)-f.Limit:]
	}
	return out, nil
}

// scrubReasons replaces, in the jobs' wait reasons, the IDs of other teams'
// queued jobs with "another team's job": a job behind another team's
// reservation, or behind its job under strict FIFO, learns that it waits, not
// whose job it waits for.
func scrubReasons(b Backend, jobs []scheduler.Job, teams []string) []scheduler.Job {
	var hidden []string
	for _, j := range b.Jobs(scheduler.JobFilter{State: scheduler.StateQueued}) {
		if !slices.Contains(teams, j.Spec.Team) {
			hidden = append(hidden, j.ID)
		}
	}
	if len(hidden) == 0 {
		return jobs
	}
	// Longest first: "sched/nlp/12" before "sched/nlp/1".
	slices.SortFunc(hidden, func(a, b string) int { return len(b) - len(a) })
	for i := range jobs {
		for _, id := range hidden {
			jobs[i].WaitReason = strings.ReplaceAll(jobs[i].WaitReason, id, "another team's job")
		}
	}
	return jobs
}
