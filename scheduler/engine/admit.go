package engine

import (
	"container/heap"
	"fmt"
	"slices"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// DecisionKind is what an admission pass decided about a job.
type DecisionKind string

// Decision kinds. Reclaim, preempt and expire are orders for the caller: stop the
// job through its executor (with Decision.Grace), then call Confirm — or
// KeepRunning if the executor failed. The engine keeps counting the job's GPUs
// until the grace is over, then requeues (or finishes) it itself and says so
// with a requeue (or stop) decision.
const (
	// DecisionAdmit: the job got GPUs (Borrowed of them beyond its quota).
	DecisionAdmit DecisionKind = "admit"
	// DecisionReclaim: the running job gives borrowed GPUs back to For, whose
	// queue lent them.
	DecisionReclaim DecisionKind = "reclaim"
	// DecisionPreempt: the running job makes room for For, of higher priority.
	DecisionPreempt DecisionKind = "preempt"
	// DecisionExpire: the job ran past its time limit or its pool's maximum job
	// duration; stop it for good.
	DecisionExpire DecisionKind = "expire"
	// DecisionRequeue: a stopped job is back in its queue, at its old place, as
	// its next attempt (OldKey was the stopped attempt's key).
	DecisionRequeue DecisionKind = "requeue"
	// DecisionStop: a job stopped for good (after expire, or a cancel policy).
	DecisionStop DecisionKind = "stop"
	// DecisionWait: why a queued job is not admitted changed (Reason).
	DecisionWait DecisionKind = "wait"
	// DecisionSkip: something was not done, and Reason says why (a protected
	// pool's job past its maximum duration).
	DecisionSkip DecisionKind = "skip"
)

// Decision is one thing an admission pass decided.
type Decision struct {
	Kind DecisionKind
	Job  *Job
	// For is the job a reclaim or preemption makes room for.
	For      *Job
	Borrowed int
	// Requeue says whether the stopped job comes back (reclaim, preempt, expire).
	Requeue bool
	// Grace is how long the job may take to checkpoint and exit.
	Grace time.Duration
	// OldKey and OldCluster are the key and cluster of the attempt that was
	// stopped (requeue).
	OldKey, OldCluster string
	Reason             string
}

// Schedule runs one admission pass at now: it orders jobs past their time limit
// stopped, returns the GPUs of stopped jobs whose grace is over (requeueing them),
// admits queued jobs in priority then fair-share order, and orders running jobs
// stopped to make room for queued ones that are owed it. Admissions take effect at
// once.
func (e *Engine) Schedule(now time.Time) []Decision {
	e.cycle++
	e.now = now
	var out []Decision
	out = e.expire(now, out)
	out = e.releaseStopped(now, out)
	// Jobs that fit without borrowing go first (Kueue does the same): otherwise a
	// requeued borrower, earlier in line, would take back the GPUs just reclaimed
	// for the lender, and be reclaimed again, forever.
	if e.place != nil {
		// One pass: a borrowing job left to a second pass would be given no
		// reservation, and the in-quota jobs behind it would take the nodes it
		// waits for, forever. Jobs owed reclaimed GPUs go first instead.
		return e.placePass(now, true, out)
	}
	out = e.admitPass(now, false, out)
	return e.admitPass(now, true, out)
}

// releaseStopped requeues (or finishes) reclaiming jobs whose stop the executor
// confirmed and whose grace is over.
func (e *Engine) releaseStopped(now time.Time, out []Decision) []Decision {
	var due []*Job
	for _, v := range e.reclaiming {
		if v.confirmed && !now.Before(v.ReclaimBy) {
			due = append(due, v)
		}
	}
	for _, v := range due {
		reason := v.ReclaimReason
		if v.noRequeue || v.Resubmits { // its own system submits the next attempt
			_, _ = e.Finish(v.ID, schemas.StatusCancelled, now) // v is running: this cannot fail
			out = append(out, Decision{Kind: DecisionStop, Job: v, Reason: reason})
			continue
		}
		old, cluster := v.AttemptKey(), v.Cluster
		_, _ = e.Requeue(v.ID, now) // v is running: this cannot fail
		out = append(out, Decision{Kind: DecisionRequeue, Job: v, OldKey: old, OldCluster: cluster, Reason: reason})
	}
	return out
}

// expire orders jobs past their time limit stopped; protected pools' jobs are
// reported once and left alone.
func (e *Engine) expire(now time.Time, out []Decision) []Decision {
	for _, q := range e.queues {
		for _, j := range q.running {
			limit := j.timeLimit()
			if j.State != StateAdmitted || limit == 0 || now.Sub(j.AdmitTime) < limit || !e.stoppable(j) {
				continue
			}
			reason := fmt.Sprintf("ran %s, past its limit of %s", now.Sub(j.AdmitTime).Round(time.Second), limit)
			if q.pool.Protected {
				if !j.expirySkipped {
					j.expirySkipped = true
					e.touch(j)
					out = append(out, Decision{Kind: DecisionSkip, Job: j, Reason: reason + "; pool " + j.Pool + " is protected"})
				}
				continue
			}
			e.markReclaim(j, nil, reason, now)
			j.noRequeue = true
			e.touch(j)
			out = append(out, Decision{Kind: DecisionExpire, Job: j, Reason: reason})
		}
	}
	return out
}

// admitPass considers every queued job once, best first. Without borrowing, only
// jobs whose cheapest fitting card needs no borrowed quota are admitted, and
// nothing else happens to the others.
func (e *Engine) admitPass(now time.Time, borrowing bool, out []Decision) []Decision {
	h := &headHeap{}
	for _, q := range e.queues {
		if len(q.pending) > 0 {
			h.items = append(h.items, e.head(q, 0))
		}
	}
	heap.Init(h)
	var touched []*queueState
	for h.Len() > 0 {
		hd := heap.Pop(h).(head)
		q := hd.q
		j := q.pending[hd.i]
		before := len(out)
		out = e.consider(j, now, borrowing, out)
		if len(out) > before && out[before].Kind == DecisionAdmit && (len(touched) == 0 || touched[len(touched)-1] != q) {
			touched = append(touched, q)
		}
		if hd.i+1 < len(q.pending) {
			heap.Push(h, e.head(q, hd.i+1))
		}
	}
	for _, q := range touched {
		q.pending = slices.DeleteFunc(q.pending, func(j *Job) bool { return j.State != StateQueued })
	}
	return out
}

// consider tries to admit j, else to make room for it, else says why it waits.
func (e *Engine) consider(j *Job, now time.Time, borrowing bool, out []Decision) []Decision {
	if j.Held {
		j.WaitReason = "held: reclaimed while idle; waits for its owner to resume it (gpupool jobs resume " + j.ID + ")"
		return out
	}
	if ok, reason := j.window.allows(now); !ok {
		return e.wait(j, block{kind: blockWindow, why: reason}, out)
	}
	if k := j.owed - 1; k >= 0 {
		// GPUs of card k were reclaimed for it: take them, even if a cheaper
		// card would need borrowing (which the first pass leaves for the second,
		// where the requeued borrower could take them back first, forever).
		if c, borrow, _ := e.fitsOn(j, k); c != nil && borrow == 0 {
			return e.admit(j, k, c, 0, now, out)
		}
	}
	var why block
	for i, k := range j.cards {
		c, borrow, b := e.fitsOn(j, k)
		if c != nil {
			if borrow > 0 && !borrowing {
				return out // its cheapest card needs borrowing: the second pass decides
			}
			if i > 0 && e.neededBy(j, k, c) {
				// Small jobs not on big cards: its cheaper cards are full, and a job
				// that needs this one would no longer fit.
				return e.wait(j, block{kind: blockDearer, card: k}, out)
			}
			return e.admit(j, k, c, borrow, now, out)
		}
		if i == 0 {
			why = b
		} else {
			why.others++
		}
	}
	if !borrowing {
		return out
	}
	if j.pendingVictims > 0 {
		// Room is being made for it; do not take more.
		return e.wait(j, block{kind: blockVictims, n: j.pendingVictims}, out)
	}
	victims, kind, forWhy := e.findVictims(j)
	if len(victims) == 0 {
		return e.wait(j, why, out)
	}
	j.owed = e.resOf(victims[0]) + 1
	e.touch(j) // the promise is part of the job state: a restart keeps it
	for _, v := range victims {
		grace := v.reclaimGrace()
		e.markReclaim(v, j, forWhy, now.Add(grace))
		out = append(out, Decision{Kind: kind, Job: v, For: j, Requeue: true, Grace: grace, Reason: forWhy})
	}
	return e.wait(j, block{kind: blockVictims, n: j.pendingVictims}, out)
}

// admit gives j its GPUs of card k in cluster c.
func (e *Engine) admit(j *Job, k int, c *clusterState, borrow int, now time.Time, out []Decision) []Decision {
	e.touch(j)
	j.State, j.Card, j.Cluster, j.Borrowed, j.owed = StateAdmitted, e.cards[e.resCard[k]].Name, c.name, borrow, 0
	j.AdmitTime, j.WaitReason, j.waitBlock = now, "", block{}
	j.PlacementReason = e.whyPlaced(j, c.name)
	j.QueueWaitS += now.Sub(j.QueuedAt).Seconds()
	e.occupy(j)
	j.q.running = append(j.q.running, j)
	return append(out, Decision{Kind: DecisionAdmit, Job: j, Borrowed: borrow})
}

// wait records why j waits; a decision is returned only when the reason changes,
// so the audit trail says why without a row per pass.
func (e *Engine) wait(j *Job, why block, out []Decision) []Decision {
	if j.waitBlock == why {
		return out
	}
	j.waitBlock = why
	j.WaitReason = why.String(e)
	e.touch(j)
	return append(out, Decision{Kind: DecisionWait, Job: j, Reason: j.WaitReason})
}

// head is a queue's next pending job to consider in this pass, with the keys it
// is ordered by copied in (comparing through the job's pointer is what a pass
// spends most of its time on otherwise).
type head struct {
	q     *queueState
	i     int
	prio  int
	seq   uint64
	share float64
}

func (e *Engine) head(q *queueState, i int) head {
	j := q.pending[i]
	return head{q: q, i: i, prio: j.Priority, seq: j.Seq, share: e.share(q)}
}

// headHeap orders queue heads: higher priority, then lower dominant share per
// weight, then earlier submission.
type headHeap struct{ items []head }

func (h *headHeap) Len() int { return len(h.items) }
func (h *headHeap) Less(a, b int) bool {
	x, y := &h.items[a], &h.items[b]
	if x.prio != y.prio {
		return x.prio > y.prio
	}
	if x.share != y.share {
		return x.share < y.share
	}
	return x.seq < y.seq
}
func (h *headHeap) Swap(a, b int) { h.items[a], h.items[b] = h.items[b], h.items[a] }
func (h *headHeap) Push(x any)    { h.items = append(h.items, x.(head)) }
func (h *headHeap) Pop() any {
	old := h.items
	x := old[len(old)-1]
	h.items = old[:len(old)-1]
	return x
}

// neededScan bounds how far into each queue's line neededBy looks.
const neededScan = 64

// neededBy reports whether a queued job of at least j's priority, whose
// cheapest card is k, fits on k now in cluster c and would not once j took its
// GPUs there. j could run on a cheaper card, which is full: it waits for one
// rather than take the dearer card from a job that has no other.
func (e *Engine) neededBy(j *Job, k int, c *clusterState) bool {
	free := c.capacity[k] - c.used[k]
	for _, q := range e.queues {
		for n, o := range q.pending {
			if n >= neededScan || o.Priority < j.Priority {
				break
			}
			if o == j || o.State != StateQueued || o.Held || len(o.cards) == 0 || o.cards[0] != k ||
				free-j.amount() >= o.amount() || e.clusterFor(o, k) != c {
				continue
			}
			if _, why := o.jobQuotaFits(k); why.kind == blockNone {
				return true
			}
		}
	}
	return false
}
