package engine

import (
	"cmp"
	"slices"
	"time"

	"github.com/gpupool/gpupool/scheduler/executor"
)

// The engine's side of the job state: what a job is with the bookkeeping its
// JSON leaves out (SavedJob), the jobs changed since the last look (TakeDirty),
// all of them (Saved), and putting them back (Restore). Where they are written —
// a snapshot file and a journal beside it — is the scheduler's (persist.go,
// journal.go there).

// SavedJob is a job with the engine's bookkeeping that its JSON leaves out.
type SavedJob struct {
	Job
	ReclaimFor    string      `json:"reclaim_for,omitempty"`
	Confirmed     bool        `json:"confirmed,omitempty"`
	NoRequeue     bool        `json:"no_requeue,omitempty"`
	ExpirySkipped bool        `json:"expiry_skipped,omitempty"`
	StopFailures  int         `json:"stop_failures,omitempty"`
	NoStop        bool        `json:"no_stop,omitempty"`
	StopRetryAt   time.Time   `json:"stop_retry_at,omitzero"`
	Suspension    *Suspension `json:"suspension,omitempty"`
	// OwedCard is the card running jobs were ordered stopped on to make room for
	// this queued job (Job.owed): kept, so that a restart in the middle of the
	// reclaim still hands it the GPUs it was promised.
	OwedCard string `json:"owed_card,omitempty"`
}

// Suspension is how a requeued job was stopped by an executor that keeps it (a
// suspended Kubernetes Job or deactivated Kueue Workload, a Slurm job requeued
// with a hold): when the job is admitted again, the same executor resumes it.
// The service sets it (SetSuspension); the engine only keeps and saves it.
type Suspension struct {
	Target executor.Target `json:"target"`
	// Failures counts failed rounds of resume tries; RetryAt is when the next
	// may start.
	Failures int       `json:"failures,omitempty"`
	RetryAt  time.Time `json:"retry_at,omitzero"`
}

// Suspension returns the job's suspension (nil: none).
func (j *Job) Suspension() *Suspension { return j.suspension }

// SetSuspension sets (nil: clears) what holds job j stopped outside the
// scheduler, and marks it changed.
func (e *Engine) SetSuspension(j *Job, sp *Suspension) {
	j.suspension = sp
	e.touch(j)
}

// touch marks j changed, for the next TakeDirty.
func (e *Engine) touch(j *Job) { e.dirty[j] = struct{}{} }

// Touch marks j changed after its caller set one of its fields (External,
// Resubmits, Held, a Suspension's tries), so that the next TakeDirty has it.
func (e *Engine) Touch(j *Job) { e.touch(j) }

// saveJob is j as the state file keeps it.
func (e *Engine) saveJob(j *Job) SavedJob {
	sj := SavedJob{Job: *j, Confirmed: j.confirmed, NoRequeue: j.noRequeue, ExpirySkipped: j.expirySkipped,
		StopFailures: j.stopFailures, NoStop: j.noStop, StopRetryAt: j.stopRetryAt}
	if j.reclaimFor != nil {
		sj.ReclaimFor = j.reclaimFor.ID
	}
	if sp := j.suspension; sp != nil {
		c := *sp
		sj.Suspension = &c
	}
	if j.owed > 0 {
		sj.OwedCard = e.cards[j.owed-1].Name
	}
	return sj
}

// Seq is the last place in line handed out.
func (e *Engine) Seq() uint64 { return e.seq }

// TakeDirty returns the jobs changed since the last call (each in full, in line
// order) and the IDs of those gone (finished), and forgets them; ok is false
// when nothing changed and the last place in line is still lastSeq.
func (e *Engine) TakeDirty(lastSeq uint64) (jobs []SavedJob, gone []string, ok bool) {
	if len(e.dirty) == 0 && e.seq == lastSeq {
		return nil, nil, false
	}
	for j := range e.dirty {
		if e.jobs[j.ID] == j {
			jobs = append(jobs, e.saveJob(j))
		} else {
			gone = append(gone, j.ID)
		}
	}
	clear(e.dirty)
	slices.SortFunc(jobs, func(a, b SavedJob) int { return cmp.Compare(a.Seq, b.Seq) })
	slices.Sort(gone)
	return jobs, gone, true
}

// Saved returns the engine's queued and running jobs, in line order.
func (e *Engine) Saved() []SavedJob {
	out := make([]SavedJob, 0, len(e.jobs))
	for _, j := range e.jobs {
		out = append(out, e.saveJob(j))
	}
	slices.SortFunc(out, func(a, b SavedJob) int { return cmp.Compare(a.Seq, b.Seq) })
	return out
}

// Restore puts saved jobs back into an engine that has none, with seq the last
// place in line handed out. A job the model no longer allows (its queue, card or
// cluster gone) is left out and named in dropped; a running job whose card or
// cluster is gone is queued again; a running job whose saved placement no longer
// fits the model's nodes keeps running without its GPUs on the nodes, named with
// why in unplaced.
func (e *Engine) Restore(seq uint64, jobs []SavedJob) (dropped, unplaced []string) {
	e.seq = max(e.seq, seq)
	byID := map[string]*Job{}
	for i := range jobs {
		sj := &jobs[i]
		j, ok := e.restoreJob(sj, &unplaced)
		if !ok {
			dropped = append(dropped, sj.ID)
			continue
		}
		e.jobs[j.ID] = j
		byID[j.ID] = j
		e.seq = max(e.seq, j.Seq)
	}
	for i := range jobs {
		sj := &jobs[i]
		j, f := byID[sj.ID], byID[sj.ReclaimFor]
		if j != nil && f != nil && j.State == StateReclaiming && f.State == StateQueued {
			j.reclaimFor = f
			f.pendingVictims++
		}
	}
	return dropped, unplaced
}

// restoreJob rebuilds one saved job and puts it in its queue (ok false: the
// model no longer allows it).
func (e *Engine) restoreJob(sj *SavedJob, unplaced *[]string) (*Job, bool) {
	j := new(Job)
	*j = sj.Job
	q := e.queueIdx[j.Spec.Queue]
	if q == nil || j.ID == "" || e.jobs[j.ID] != nil {
		return nil, false
	}
	j.q, j.Pool = q, q.cfg.Pool
	cards, err := e.checkSpec(j)
	if err != nil {
		return nil, false
	}
	j.cards = cards
	if err := e.compile(j); err != nil {
		return nil, false
	}
	j.waitBlock, j.owed = block{}, 0
	j.stopFailures, j.noStop, j.stopRetryAt = sj.StopFailures, sj.NoStop, sj.StopRetryAt
	if sp := sj.Suspension; sp != nil {
		c := *sp
		j.suspension = &c
	}
	_, cardOK := e.jobRes(j)
	_, clusterOK := e.clusterIdx[j.Cluster]
	switch {
	case (j.State == StateAdmitted || j.State == StateReclaiming) && cardOK && clusterOK:
		e.occupy(j)
		if err := e.replace(j); err != nil && e.place != nil {
			*unplaced = append(*unplaced, j.ID+": "+err.Error())
		}
		q.running = append(q.running, j)
		switch {
		case j.State == StateReclaiming && sj.Confirmed:
			j.confirmed, j.noRequeue = true, sj.NoRequeue
			e.reclaiming = append(e.reclaiming, j)
		case j.State == StateReclaiming:
			// Its stop may never have reached the executor: the next pass decides again.
			j.State, j.ReclaimBy, j.ReclaimReason = StateAdmitted, time.Time{}, ""
		}
		j.expirySkipped = sj.ExpirySkipped
	case j.State == StateAdmitted || j.State == StateReclaiming || j.State == StateQueued:
		if j.State != StateQueued {
			j.Attempt++
		} else if k, ok := e.cardIdx[sj.OwedCard]; ok && sj.OwedCard != "" {
			j.owed = k + 1
		}
		j.State, j.Card, j.Cluster, j.Borrowed, j.AdmitTime = StateQueued, "", "", 0, time.Time{}
		j.Placement, j.ExpectedStart = nil, time.Time{}
		j.ReclaimBy, j.ReclaimReason, j.WaitReason = time.Time{}, "", ""
		j.PlacementReason = e.whyWaiting(j)
		q.insertPending(j)
	default:
		return nil, false
	}
	return j, true
}
