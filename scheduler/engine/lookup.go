package engine

import (
	"cmp"
	"slices"
)

// Look-ups for the service: the live jobs, the queues, and whether the model
// has a card type or cluster.

// Live returns the queued or running job with this ID (not a finished one).
func (e *Engine) Live(id string) (*Job, bool) {
	j, ok := e.jobs[id]
	return j, ok
}

// LiveJobs returns the queued and running jobs, in line order.
func (e *Engine) LiveJobs() []*Job {
	out := make([]*Job, 0, len(e.jobs))
	for _, j := range e.jobs {
		out = append(out, j)
	}
	slices.SortFunc(out, func(a, b *Job) int { return cmp.Compare(a.Seq, b.Seq) })
	return out
}

// Queue returns the queue named name.
func (e *Engine) Queue(name string) (Queue, bool) {
	q, ok := e.queueIdx[name]
	if !ok {
		return Queue{}, false
	}
	return q.cfg, true
}

// HasCard reports whether the model has the card type name (not a MIG
// resource).
func (e *Engine) HasCard(name string) bool {
	k, ok := e.cardIdx[name]
	return ok && k < e.nWhole
}

// HasCluster reports whether the model has the cluster name.
func (e *Engine) HasCluster(name string) bool {
	_, ok := e.clusterIdx[name]
	return ok
}

// queueFor is the queue an external job of team and project in pool waits in:
// the pool's queue of that team and project, else of that team, else the pool's
// only queue open to anyone; ok is false when there is none.
func (e *Engine) QueueFor(pool, team, project string) (Queue, bool) {
	q := e.queueFor(pool, team, project)
	if q == nil {
		return Queue{}, false
	}
	return q.cfg, true
}

func (e *Engine) queueFor(pool, team, project string) *queueState {
	var teamQ, openQ *queueState
	opens := 0
	for _, q := range e.queues {
		if pool != "" && q.cfg.Pool != pool {
			continue
		}
		switch {
		case team != "" && q.cfg.Team == team && q.cfg.Project != "" && q.cfg.Project == project:
			return q
		case team != "" && q.cfg.Team == team && q.cfg.Project == "" && teamQ == nil:
			teamQ = q
		case q.cfg.Team == "" && q.cfg.Project == "":
			openQ = q
			opens++
		}
	}
	if teamQ != nil {
		return teamQ
	}
	if opens == 1 && pool != "" {
		return openQ
	}
	return nil
}
