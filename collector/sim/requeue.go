package sim

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// LabelFirstSubmit is the label on a requeued attempt's submit event that holds
// the first attempt's submission time (RFC 3339, UTC): the place in line it kept.
const LabelFirstSubmit = "gpupool.io/first-submit"

// Requeue stops a running job the way a scheduler reclaiming its GPUs does, and
// queues the rest of its work again as its next attempt, keeping its place. After
// grace (at least 1 ms; a checkpointing job's time to save) its processes exit and
// the next Advance returns its end event with status preempted and exit code 143;
// at that same instant the next attempt is submitted — attempt+1, rerun_of the
// stopped key, the first attempt's submission time in label gpupool.io/first-submit
// — followed by a requeue event, and it waits in the queue ahead of everything
// submitted after its first attempt.
//
// The next attempt resumes the work rather than redoing it: a training job loses
// what it did since its last checkpoint. A notebook reclaimed while idle is
// suspended until its owner comes back — the end of the idle stretch it was in,
// when they would have typed again: its next attempt is submitted then (and
// waits from then), without that stretch; when the stretch was the notebook's
// last, its owner never comes back and there is no next attempt. Resubmitting
// at once would put an interactive job straight back on the GPUs it was reclaimed
// from, ahead of everyone waiting (it keeps its place), to do at once the work
// its owner does later. A job started by hand (source process) has no key until
// it runs again, so its submit comes at its start and no requeue event is sent.
func (f *Fleet) Requeue(key string, grace time.Duration) error {
	return f.RequeueFor(key, grace, "")
}

// RequeueFor is Requeue by a policy acting on a finding of kind finding, which
// the notice to the job's owner names. A small job that asked for a big card by
// name, requeued for wrong_card, is started again on the card the finding
// recommends: the cheapest whole-GPU card type of its cluster that holds its
// memory with a quarter to spare, when there is one cheaper than its own (an
// owner who ignores the advice starts it where it was: docs/demo.md measures
// both). Any other requeue keeps the job's card.
func (f *Fleet) RequeueFor(key string, grace time.Duration, finding schemas.FindingKind) error {
	if grace < 0 {
		return fmt.Errorf("sim: requeue job %q: negative grace %s", key, grace)
	}
	j := f.runningJobs[key]
	if j == nil {
		if f.unadmit(key, schemas.StatusPreempted) {
			return nil // admitted, not started: it waits for its gate again
		}
		return fmt.Errorf("sim: requeue job %q: %w", key, ErrUnknownJob)
	}
	j.stopping = true
	f.push(event{atMs: f.nowMs + max(1, grace.Milliseconds()), kind: evStop, j: j, status: schemas.StatusPreempted, requeue: true,
		toRightCard: finding == schemas.KindWrongCard && j.kind == kindWrongCard})
	return nil
}

// requeue submits the next attempt of j, which an executor has just stopped: at
// once, or when a reclaimed idle notebook's owner comes back; on the right card
// when it was requeued for wrong_card (RequeueFor).
func (f *Fleet) requeue(j *job, toRightCard bool) {
	n, awayMs := j.resume(j.fate(), f.nowMs-j.startMs)
	if n == nil {
		return // a notebook reclaimed in its last idle stretch: its owner has left
	}
	if toRightCard {
		if card := j.c.rightCard(n.memMiB, n.card); card != "" {
			n.card = card
		}
	}
	if awayMs > 0 {
		f.push(event{atMs: f.nowMs + awayMs, kind: evSubmit, j: n, requeue: true})
		return
	}
	f.submitRequeued(n)
}

// rightCard is the cheapest whole-GPU card type of c that holds memMiB with a
// quarter to spare and is cheaper than card; "" when there is none.
func (c *cluster) rightCard(memMiB uint32, card string) string {
	var cur *class
	for _, cl := range c.classes {
		if cl.mig == nil && cl.cardType == card {
			cur = cl
		}
	}
	var best *class
	for _, cl := range c.classes {
		if cl.mig != nil || uint64(cl.card.fbMiB)*4 < uint64(memMiB)*5 {
			continue
		}
		if cur != nil && cl.card.rank >= cur.card.rank {
			continue
		}
		if best == nil || cl.card.rank < best.card.rank {
			best = cl
		}
	}
	if best == nil {
		return ""
	}
	return best.cardType
}

// submitRequeued submits n, the next attempt of a job an executor stopped, and
// says it is a requeue.
func (f *Fleet) submitRequeued(n *job) {
	f.submit(n)
	if n.key != "" {
		f.emit(n.baseEvent(f.nowMs, schemas.EventRequeue))
	}
}

// resume returns the attempt that continues j after ranMs of running: the same
// owner, request and behaviour, with the work done (up to the last checkpoint)
// taken off and its phases shifted to match. awayMs is how long a notebook
// stopped while idle stays away (the rest of that idle stretch); nil when that
// stretch was its last.
func (j *job) resume(r *rand.Rand, ranMs int64) (next *job, awayMs int64) {
	n := *j
	n.key, n.attempt, n.rerunOf, n.requeued = "", j.attempt+1, j.key, true
	n.state, n.slots, n.truths, n.reserved, n.lost = stateNew, nil, nil, nil, false
	n.salt = r.Uint64()
	done := min(max(ranMs, 0), j.durMs)
	if j.ckptEveryMs > 0 {
		done = done / j.ckptEveryMs * j.ckptEveryMs
	}
	if len(j.segs) > 0 {
		// A notebook: drop what ran and the rest of an idle stretch it was in.
		var segs []segment
		skip := done
		for _, s := range j.segs {
			if s.toMs <= done {
				continue
			}
			if s.fromMs <= done && s.idle {
				skip = s.toMs
				continue
			}
			segs = append(segs, s)
		}
		if len(segs) == 0 {
			return nil, 0
		}
		awayMs = skip - done
		for i := range segs {
			segs[i].fromMs = max(segs[i].fromMs, skip) - skip
			segs[i].toMs -= skip
		}
		n.segs, done = segs, skip
	}
	n.durMs = max(j.durMs-done, minutes(1))
	n.planMs = max(j.planMs-done, n.durMs)
	return &n, awayMs
}
