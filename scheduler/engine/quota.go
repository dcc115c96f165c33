package engine

import (
	"fmt"
	"math"
	"slices"
)

// unlimited marks a queue with no borrowing limit.
const unlimited = math.MaxInt32

// queueState is a queue's quota and usage per card type (indexed as Engine.cards),
// and its jobs.
type queueState struct {
	cfg    Queue
	pool   *Pool
	cohort *cohortState
	weight float64
	// nominal, borrowLimit (unlimited, or 0 when the pool may not borrow) and
	// lendLimit (0 when the pool may not lend) per card.
	nominal, borrowLimit, lendLimit []int
	used                            []int
	// pending is sorted by Job.before; running holds admitted and reclaiming jobs.
	pending []*Job
	running []*Job
	// A failed victim search is remembered for the rest of an admission cycle, so
	// the queue's other blocked jobs do not repeat it.
	failCycle           uint64
	failGPUs, failPrio  int
	defaultPriorityName string
}

// cohortState sums, per card, what its queues borrow beyond their nominal quota and
// what idle nominal quota they lend. Admission keeps borrowed ≤ lendable.
type cohortState struct {
	name               string
	queues             []*queueState
	borrowed, lendable []int
}

// clusterState is one cluster's GPUs per card and how many are held.
type clusterState struct {
	name           string
	capacity, used []int
}

// contribution is what queue q adds to its cohort's sums for card k when it uses
// used GPUs of it.
func (q *queueState) contribution(k, used int) (borrowed, lendable int) {
	n := q.nominal[k]
	if used > n {
		return used - n, 0
	}
	return 0, min(q.lendLimit[k], n-used)
}

// setUsed changes q's usage of card k, keeping the cohort's sums exact.
func (q *queueState) setUsed(k, used int) {
	ob, ol := q.contribution(k, q.used[k])
	nb, nl := q.contribution(k, used)
	q.cohort.borrowed[k] += nb - ob
	q.cohort.lendable[k] += nl - ol
	q.used[k] = used
}

// blockKind is why a job does not fit on a card type.
type blockKind uint8

const (
	blockNone     blockKind = iota
	blockNoBorrow           // past nominal, and the queue may not borrow
	blockLimit              // past nominal + borrowing limit
	blockLentOut            // within nominal, but the cohort has lent it out
	blockNoCohort           // past nominal, and the queue has no cohort
	blockCohort             // the cohort has no idle quota to lend
	blockCapacity           // no cluster has the GPUs free
	blockVictims            // waiting for reclaimed jobs to stop
	blockDearer             // its cheaper cards are full; card is kept for a job that needs it
	blockWindow             // outside the job's start window (window.go)
	blockPlace              // no placement on the nodes now (engine_place.go); why is its kind
	blockPinned             // past nominal, and the job opted out of preemption (it may not borrow)
)

// block says why a job waits. It is comparable, so a job's reason is formatted
// only when it changes (formatting it for every job in every pass is what would
// cost).
type block struct {
	kind                  blockKind
	q                     *queueState
	card, after, n, limit int
	others                int    // other card types that did not fit either
	why                   string // blockWindow: the window's reason
}

// String says it in words.
func (b block) String(e *Engine) string {
	var s string
	card := e.cards[b.card].Name
	switch b.kind {
	case blockNoBorrow:
		s = fmt.Sprintf("quota: queue %s would use %d %s, past its nominal %d, and may not borrow", b.q.cfg.Name, b.after, card, b.n)
	case blockLimit:
		s = fmt.Sprintf("quota: queue %s would use %d %s, past its nominal %d + borrowing limit %d", b.q.cfg.Name, b.after, card, b.n, b.limit)
	case blockLentOut:
		s = fmt.Sprintf("quota: queue %s's nominal %s is lent out in cohort %s", b.q.cfg.Name, card, b.q.cohort.name)
	case blockNoCohort:
		s = fmt.Sprintf("quota: queue %s would use %d %s, past its nominal %d, and is in no cohort to borrow from", b.q.cfg.Name, b.after, card, b.n)
	case blockCohort:
		s = fmt.Sprintf("quota: cohort %s has no idle %s quota to lend", b.q.cohort.name, card)
	case blockPinned:
		s = fmt.Sprintf("quota: queue %s would use %d %s, past its nominal %d, and a job that is not preemptible may not borrow (borrowed GPUs must be reclaimable)", b.q.cfg.Name, b.after, card, b.n)
	case blockCapacity:
		where := "no cluster"
		if b.limit >= 0 {
			where = "cluster " + e.clusters[b.limit].name
		}
		s = fmt.Sprintf("capacity: %s has fewer than %d %s free", where, b.n, card)
	case blockVictims:
		return fmt.Sprintf("waiting for %d job(s) to give back GPUs", b.n)
	case blockDearer:
		return fmt.Sprintf("card: its cheaper cards are full, and the free %s are kept for a waiting job that needs them", card)
	case blockWindow, blockPlace:
		return b.why
	}
	if b.others > 0 {
		s += fmt.Sprintf(" (and no other of its %d card types fits)", b.others+1)
	}
	return s
}

// quotaFits reports whether q may take g more GPUs of card k: within its nominal
// quota plus its borrowing limit, with its cohort still lending at least what its
// queues borrow. borrow is how many of the g would be beyond nominal.
func (q *queueState) quotaFits(k, g int) (borrow int, why block) {
	after := q.used[k] + g
	n := q.nominal[k]
	if after > n && q.borrowLimit[k] != unlimited && after > n+q.borrowLimit[k] {
		if q.borrowLimit[k] == 0 {
			return 0, block{kind: blockNoBorrow, q: q, card: k, after: after, n: n}
		}
		return 0, block{kind: blockLimit, q: q, card: k, after: after, n: n, limit: q.borrowLimit[k]}
	}
	ob, ol := q.contribution(k, q.used[k])
	nb, nl := q.contribution(k, after)
	c := q.cohort
	if c.borrowed[k]-ob+nb > c.lendable[k]-ol+nl {
		switch {
		case after <= n:
			return 0, block{kind: blockLentOut, q: q, card: k}
		case c.name == "":
			return 0, block{kind: blockNoCohort, q: q, card: k, after: after, n: n}
		}
		return 0, block{kind: blockCohort, q: q, card: k}
	}
	return min(g, max(0, after-n)), block{}
}

// jobQuotaFits is quotaFits for j: a job that opted out of preemption may not
// borrow, since borrowed GPUs must go back to their lender when it needs them,
// and a team's "not preemptible" is its own claim (issue 37: a team could keep
// GPUs its cohort lent, forever).
func (j *Job) jobQuotaFits(k int) (borrow int, why block) {
	borrow, why = j.q.quotaFits(k, j.amount())
	if why.kind == blockNone && borrow > 0 && !j.Spec.preemptible() {
		return 0, block{kind: blockPinned, q: j.q, card: k, after: j.q.used[k] + j.amount(), n: j.q.nominal[k]}
	}
	return borrow, why
}

// maxEver is the most GPUs of card k the queue could ever hold at once: its
// nominal quota plus what it may borrow from the rest of its cohort.
func (q *queueState) maxEver(k int) int {
	lendable := 0
	for _, o := range q.cohort.queues {
		if o != q {
			lendable += o.lendLimit[k]
		}
	}
	return q.nominal[k] + min(q.borrowLimit[k], lendable)
}

// share is the queue's dominant share (its largest fraction of any card type's
// capacity) over its weight: fair sharing admits from the lowest first.
func (e *Engine) share(q *queueState) float64 {
	s := 0.0
	for k, u := range q.used {
		if u > 0 && e.totalCap[k] > 0 {
			s = max(s, float64(u)/float64(e.totalCap[k]))
		}
	}
	return s / q.weight
}

// occupy and release move a job's GPUs in or out of its queue's, cohort's and
// cluster's counts; they are exact inverses, which victim search relies on.
func (e *Engine) occupy(j *Job) {
	k, c := e.resOf(j), e.clusterIdx[j.Cluster]
	j.q.setUsed(k, j.q.used[k]+j.amount())
	e.use(e.clusters[c], k, j.amount())
}

func (e *Engine) release(j *Job) {
	k, c := e.resOf(j), e.clusterIdx[j.Cluster]
	j.q.setUsed(k, j.q.used[k]-j.amount())
	e.use(e.clusters[c], k, -j.amount())
}

// use changes cluster c's use of resource k by d (a fraction's also moves the
// card's whole GPUs it shares).
func (e *Engine) use(c *clusterState, k, d int) {
	if e.resMode[k] != "" {
		e.moveFraction(c, k, d)
		return
	}
	c.used[k] += d
}

// clusterFor picks the cluster for g GPUs of card k: the one with the fewest free
// that still fit (best fit keeps room for big jobs), or nil.
func (e *Engine) clusterFor(j *Job, k int) *clusterState {
	var best *clusterState
	bestFree := 0
	for ci, c := range e.clusters {
		if !j.mayUse(ci) {
			continue
		}
		free := c.capacity[k] - c.used[k]
		if free >= j.amount() && (e.resMode[k] == "" || e.fractionFits(c, j, k)) && (best == nil || free < bestFree) {
			best, bestFree = c, free
		}
	}
	return best
}

// fitsOn reports whether j could be admitted on card k now, and why not.
func (e *Engine) fitsOn(j *Job, k int) (c *clusterState, borrow int, why block) {
	borrow, why = j.jobQuotaFits(k)
	if why.kind != blockNone {
		return nil, 0, why
	}
	if c = e.clusterFor(j, k); c == nil {
		why = block{kind: blockCapacity, card: k, n: j.amount(), limit: -1}
		if len(j.allowed) == 1 {
			why.limit = j.allowed[0]
		}
		return nil, 0, why
	}
	return c, borrow, block{}
}

// removeJob deletes j from a slice of jobs, keeping order.
func removeJob(s []*Job, j *Job) []*Job {
	if i := slices.Index(s, j); i >= 0 {
		return slices.Delete(s, i, i+1)
	}
	return s
}

// insertPending puts j into q's pending list at its place: by priority, then by
// its original submission order, so a requeued job keeps its place in line.
func (q *queueState) insertPending(j *Job) {
	i, _ := slices.BinarySearchFunc(q.pending, j, func(a, b *Job) int {
		if a.before(b) {
			return -1
		}
		if b.before(a) {
			return 1
		}
		return 0
	})
	q.pending = slices.Insert(q.pending, i, j)
}
