package ingest

import (
	"container/list"
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
)

// Node restriction, after Kubernetes' NodeRestriction admission: a credential may
// publish only on its own subjects (bus.Permissions), and ingest stores only what
// those subjects let it say. The identity is the subject the server delivered the
// message on, never the payload: a sample batch must name its subject's cluster and
// node; a job event its subject's cluster, and the scheduler's source only on the
// scheduler's subject; and no event may move a job to another cluster, team,
// project or queue once it has one. docs/bus-security.md, "Node restriction".

// checkSamplesSubject checks that a sample batch of cluster and node came on
// their subject.
func checkSamplesSubject(subject, cluster, node string) error {
	c, n, ok := bus.ParseSamplesSubject(subject)
	if !ok {
		return fmt.Errorf("%w: %q is not a samples subject (%s.<cluster>.<node>)", ErrSubjectMismatch, subject, bus.SamplesPrefix)
	}
	if bus.Token(cluster) != c || bus.Token(node) != n {
		return fmt.Errorf("%w: the batch is of cluster %s, node %s, but was published on %s (cluster %s, node %s)",
			ErrSubjectMismatch, schemas.Clip(cluster), schemas.Clip(node), subject, c, n)
	}
	return nil
}

// checkJobsSubject checks that every event names its subject's cluster and that
// events of source scheduler, and only those, came on the scheduler's subject.
// It returns whether the subject is the scheduler's.
func checkJobsSubject(subject string, events []schemas.JobEvent) (scheduler bool, err error) {
	cluster, scheduler, ok := bus.ParseJobsSubject(subject)
	if !ok {
		return false, fmt.Errorf("%w: %q is not a job events subject (%s.<cluster>, or the scheduler's %s.<cluster>.%s)",
			ErrSubjectMismatch, subject, bus.JobsPrefix, bus.JobsPrefix, bus.SchedulerToken)
	}
	for i := range events {
		e := &events[i]
		switch {
		case bus.Token(e.Cluster) != cluster:
			return scheduler, fmt.Errorf("%w: event %d of job %s is of cluster %s, but was published on %s (cluster %s)",
				ErrSubjectMismatch, i, schemas.Clip(e.Job), schemas.Clip(e.Cluster), subject, cluster)
		case e.Source == schemas.SourceScheduler && !scheduler:
			return scheduler, fmt.Errorf("%w: event %d of job %s claims source %s on %s; only the scheduler publishes those, on %s",
				ErrSourceNotAllowed, i, schemas.Clip(e.Job), e.Source, subject, bus.SchedulerJobsSubject(e.Cluster))
		case e.Source != schemas.SourceScheduler && scheduler:
			return scheduler, fmt.Errorf("%w: event %d of job %s has source %s on the scheduler's subject %s, which carries its own jobs' events only",
				ErrSourceNotAllowed, i, schemas.Clip(e.Job), schemas.Clip(e.Source), subject)
		}
	}
	return scheduler, nil
}

// JobIdentity is whose a job is: its cluster, team, project and queue as its
// events first gave them (empty: none gave it yet). Events are partial, so an
// event may leave a field empty; none may change one that is set.
type JobIdentity struct {
	Cluster, Team, Project, Queue string
}

// complete reports whether every field is set (nothing more can be learnt).
func (id JobIdentity) complete() bool {
	return id.Cluster != "" && id.Team != "" && id.Project != "" && id.Queue != ""
}

// fills reports whether e sets a field id has empty.
func (id JobIdentity) fills(e *schemas.JobEvent) bool {
	return (id.Cluster == "" && e.Cluster != "") || (id.Team == "" && e.Team != "") ||
		(id.Project == "" && e.Project != "") || (id.Queue == "" && e.Queue != "")
}

// merge fills id's empty fields from o.
func (id JobIdentity) merge(o JobIdentity) JobIdentity {
	if id.Cluster == "" {
		id.Cluster = o.Cluster
	}
	if id.Team == "" {
		id.Team = o.Team
	}
	if id.Project == "" {
		id.Project = o.Project
	}
	if id.Queue == "" {
		id.Queue = o.Queue
	}
	return id
}

// apply checks e against id and returns id with e's fields filled in. An event
// of the scheduler's subject may leave out a job's cluster (a job not placed
// yet); any other event must name the cluster the job is in.
func (id JobIdentity) apply(e *schemas.JobEvent, scheduler bool) (JobIdentity, error) {
	changed := func(field, was, now string) error {
		return fmt.Errorf("%w: job %s was first given %s %s; this %s event gives %s",
			ErrIdentityChanged, schemas.Clip(e.Job), field, schemas.Clip(was), e.Event, schemas.Clip(now))
	}
	if team, ok := schedulerKeyTeam(e.Job); ok && e.Team != "" && e.Team != team {
		return id, fmt.Errorf("%w: job %s is the scheduler's job of team %s (its key names it); this %s event gives team %s",
			ErrIdentityChanged, schemas.Clip(e.Job), schemas.Clip(team), e.Event, schemas.Clip(e.Team))
	}
	switch {
	case id.Cluster != "" && e.Cluster != id.Cluster && (e.Cluster != "" || !scheduler):
		return id, changed("cluster", id.Cluster, e.Cluster)
	case id.Team != "" && e.Team != "" && e.Team != id.Team:
		return id, changed("team", id.Team, e.Team)
	case id.Project != "" && e.Project != "" && e.Project != id.Project:
		return id, changed("project", id.Project, e.Project)
	case id.Queue != "" && e.Queue != "" && e.Queue != id.Queue:
		return id, changed("queue", id.Queue, e.Queue)
	}
	return id.merge(JobIdentity{Cluster: e.Cluster, Team: e.Team, Project: e.Project, Queue: e.Queue}), nil
}

// schedulerKeyTeam returns the team a scheduler job's key names: the scheduler
// keys its jobs sched/<team>/<n>[/<attempt>] (scheduler.Engine), so whoever speaks
// first of such a job cannot give it another team.
func schedulerKeyTeam(job string) (string, bool) {
	rest, ok := strings.CutPrefix(job, "sched/")
	if !ok {
		return "", false
	}
	team, _, ok := strings.Cut(rest, "/")
	return team, ok && team != ""
}

// Querier is what ingest reads the store with (store.Store implements it).
type Querier interface {
	store.Querier
	Database() string
}

// jobIdentitySQL reads each job's first non-empty cluster, team, project and
// queue from its events: what ingest accepted first (every later event agreed).
// job_events is ordered by job, so the lookup reads a few granules.
const jobIdentitySQL = `SELECT job,
    argMinIf(cluster, ts, cluster != '') AS cluster,
    argMinIf(team, ts, team != '')       AS team,
    argMinIf(project, ts, project != '') AS project,
    argMinIf(queue, ts, queue != '')     AS queue
FROM %s.job_events
WHERE job IN {jobs:Array(String)}
GROUP BY job`

// LookupJobIdentities reads the identity each of jobs was stored with; a job with
// no stored event is absent from the map.
func LookupJobIdentities(ctx context.Context, q Querier, jobs []string) (map[string]JobIdentity, error) {
	out := map[string]JobIdentity{}
	if len(jobs) == 0 {
		return out, nil
	}
	res, err := q.Query(ctx, fmt.Sprintf(jobIdentitySQL, q.Database()), store.Params{"jobs": store.ArrayParam(jobs)})
	if err != nil {
		return nil, fmt.Errorf("ingest: look up the identity of %d jobs: %w", len(jobs), err)
	}
	rows := store.Read(res, "ingest: job identities")
	for rows.Next() {
		out[rows.Str("job")] = JobIdentity{Cluster: rows.Str("cluster"), Team: rows.Str("team"), Project: rows.Str("project"), Queue: rows.Str("queue")}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// identityCacheJobs bounds the jobs whose identity ingest keeps in memory: about
// 200 bytes each. Jobs have a handful of events within hours of each other, so the
// recent ones are enough; an evicted job is read from the store again.
const identityCacheJobs = 100_000

// identities knows the identity of the jobs ingest has seen: from the events it
// accepted (in a batch not inserted yet too) and from the store, for the jobs it
// has not seen since it started, in a bounded cache shared by a pipeline's
// batches. Without a store (nil q: a test's sink) it knows what it accepted only.
type identities struct {
	q   Querier
	max int

	mu    sync.Mutex
	lru   *list.List // of *identityEntry, most recent first
	byJob map[string]*list.Element
}

type identityEntry struct {
	job string
	id  JobIdentity
}

func newIdentities(q Querier, size int) *identities {
	return &identities{q: q, max: size, lru: list.New(), byJob: map[string]*list.Element{}}
}

// get returns a job's cached identity.
func (c *identities) get(job string) (JobIdentity, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byJob[job]
	if !ok {
		return JobIdentity{}, false
	}
	c.lru.MoveToFront(el)
	return el.Value.(*identityEntry).id, true
}

// put merges id into a job's cached identity (fields set stay as they are).
func (c *identities) put(job string, id JobIdentity) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byJob[job]; ok {
		e := el.Value.(*identityEntry)
		e.id = e.id.merge(id)
		c.lru.MoveToFront(el)
		return
	}
	c.byJob[job] = c.lru.PushFront(&identityEntry{job: job, id: id})
	for c.lru.Len() > c.max {
		el := c.lru.Back()
		c.lru.Remove(el)
		delete(c.byJob, el.Value.(*identityEntry).job)
	}
}

// check checks a message's events against their jobs' identities, and against
// each other, and on success records what they add. scheduler says the message
// came on the scheduler's subject.
func (c *identities) check(ctx context.Context, events []schemas.JobEvent, scheduler bool) error {
	known := map[string]JobIdentity{}
	cached, asked := map[string]bool{}, map[string]bool{}
	var ask []string
	for i := range events {
		e := &events[i]
		id, seen := known[e.Job]
		if !seen {
			id, cached[e.Job] = c.get(e.Job)
			known[e.Job] = id
		}
		// Read the store for a job not seen since start, or one whose event would
		// set a field still empty here: another ingest process may have stored it.
		if c.q != nil && !asked[e.Job] && (!cached[e.Job] || (!id.complete() && id.fills(e))) {
			asked[e.Job] = true
			ask = append(ask, e.Job)
		}
	}
	if len(ask) > 0 {
		stored, err := LookupJobIdentities(ctx, c.q, ask)
		if err != nil {
			return fmt.Errorf("%w: %w", errTransient, err)
		}
		for job, id := range stored {
			known[job] = known[job].merge(id)
		}
	}
	for i := range events {
		e := &events[i]
		id, err := known[e.Job].apply(e, scheduler)
		if err != nil {
			return fmt.Errorf("event %d: %w", i, err)
		}
		known[e.Job] = id
	}
	for job, id := range known {
		c.put(job, id)
	}
	return nil
}
