package engine

import (
	"cmp"
	"slices"
)

// CardUsage is a queue's quota and use of one card type, in GPUs.
type CardUsage struct {
	Card    string `json:"card"`
	Nominal int    `json:"nominal"`
	// BorrowingLimit is absent when the queue may borrow whatever its cohort lends.
	BorrowingLimit *int `json:"borrowing_limit,omitempty"`
	LendingLimit   int  `json:"lending_limit"`
	Used           int  `json:"used"`
	// Borrowed is what the queue uses beyond its nominal quota; Idle is nominal
	// quota it does not use (lent out to its cohort, up to LendingLimit).
	Borrowed int `json:"borrowed"`
	Idle     int `json:"idle"`
}

// QueueStatus is a queue as `gpupool queue ls` shows it.
type QueueStatus struct {
	Name    string  `json:"name"`
	Pool    string  `json:"pool"`
	Team    string  `json:"team,omitempty"`
	Project string  `json:"project,omitempty"`
	Cohort  string  `json:"cohort,omitempty"`
	Weight  float64 `json:"weight"`
	// DominantShare is the queue's largest share of any card type's capacity.
	DominantShare float64     `json:"dominant_share"`
	Pending       int         `json:"pending"`
	Running       int         `json:"running"`
	Reclaiming    int         `json:"reclaiming"`
	Cards         []CardUsage `json:"cards"`
}

// Queues returns every queue's status, in the model's order.
func (e *Engine) Queues() []QueueStatus {
	out := make([]QueueStatus, 0, len(e.queues))
	for _, q := range e.queues {
		s := QueueStatus{
			Name: q.cfg.Name, Pool: q.cfg.Pool, Team: q.cfg.Team, Project: q.cfg.Project, Cohort: q.cfg.Cohort,
			Weight: q.weight, DominantShare: e.share(q) * q.weight, Pending: len(q.pending),
		}
		for _, j := range q.running {
			if j.State == StateReclaiming {
				s.Reclaiming++
			} else {
				s.Running++
			}
		}
		for k, c := range e.cards {
			if q.nominal[k] == 0 && q.used[k] == 0 {
				continue
			}
			u := CardUsage{Card: c.Name, Nominal: q.nominal[k], LendingLimit: q.lendLimit[k], Used: q.used[k],
				Borrowed: max(0, q.used[k]-q.nominal[k]), Idle: max(0, q.nominal[k]-q.used[k])}
			if b := q.borrowLimit[k]; b != unlimited {
				u.BorrowingLimit = &b
			}
			s.Cards = append(s.Cards, u)
		}
		out = append(out, s)
	}
	return out
}

// JobFilter selects jobs to list; empty fields match everything.
type JobFilter struct {
	Queue string
	Team  string
	State JobState
	// Limit caps how many are returned (0: all).
	Limit int
}

func (f JobFilter) match(j *Job) bool {
	return (f.Queue == "" || j.Spec.Queue == f.Queue) && (f.Team == "" || j.Spec.Team == f.Team) &&
		(f.State == "" || j.State == f.State)
}

// Jobs returns copies of the jobs f selects: running ones first, by admission,
// then queued ones in the order they would be considered within their queue,
// then recently finished ones, latest first.
func (e *Engine) Jobs(f JobFilter) []Job {
	var running, queued []*Job
	for _, q := range e.queues {
		for _, j := range q.running {
			if f.match(j) {
				running = append(running, j)
			}
		}
		for _, j := range q.pending {
			if f.match(j) {
				queued = append(queued, j)
			}
		}
	}
	slices.SortFunc(running, func(a, b *Job) int { return cmp.Or(a.AdmitTime.Compare(b.AdmitTime), cmp.Compare(a.Seq, b.Seq)) })
	slices.SortStableFunc(queued, func(a, b *Job) int {
		if a.before(b) {
			return -1
		}
		if b.before(a) {
			return 1
		}
		return 0
	})
	var out []Job
	add := func(j *Job) bool {
		if f.Limit > 0 && len(out) >= f.Limit {
			return false
		}
		out = append(out, j.Snapshot())
		return true
	}
	for _, j := range append(running, queued...) {
		if !add(j) {
			return out
		}
	}
	for i := len(e.finished) - 1; i >= 0; i-- {
		if j := e.finished[i]; f.match(j) && !add(j) {
			return out
		}
	}
	return out
}

// Snapshot copies a job for callers outside the engine's lock.
func (j *Job) Snapshot() Job {
	c := *j
	c.q, c.cards, c.reclaimFor = nil, nil, nil
	if j.Spec.Labels != nil {
		c.Spec.Labels = cloneMap(j.Spec.Labels)
	}
	return c
}
