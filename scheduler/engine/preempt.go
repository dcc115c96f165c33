package engine

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/gpupool/gpupool/schemas"
)

// findVictims chooses the running jobs to stop so that j fits, or none if no set
// would do. Two reasons allow it:
//
//   - reclaim: j fits in its queue's nominal quota, which others in its cohort
//     have borrowed; any job of a queue that is over its nominal quota may be
//     taken back, whatever its priority (a quota is a guarantee);
//   - preempt: jobs of j's own queue with a lower priority.
//
// Candidates go borrowers first (jobs of other queues over their nominal quota:
// what was lent goes back before j's own queue loses anything), then lowest
// priority, then most recently admitted (the least work lost). Greedy selection stops as soon as j fits; then every victim whose
// stop turns out not to be needed is spared (Kueue's minimal set). Jobs in a
// protected or non-preemptible pool, jobs that opted out of preemption, and
// inference jobs wanted by training are never candidates.
func (e *Engine) findVictims(j *Job) (victims []*Job, kind DecisionKind, reason string) {
	q := j.q
	if q.failCycle == e.cycle && j.amount() >= q.failGPUs && j.Priority <= q.failPrio {
		return nil, "", "" // a smaller or more urgent job of this queue already found nothing
	}
	for _, k := range j.cards {
		reclaim := q.used[k]+j.amount() <= q.nominal[k] && q.cohort.borrowed[k] > 0
		var cands []*Job
		if reclaim {
			for _, o := range q.cohort.queues {
				if o == q || o.used[k] <= o.nominal[k] {
					continue
				}
				for _, v := range o.running {
					if e.resOf(v) == k && canPreempt(v, j) && e.stoppable(v) {
						cands = append(cands, v)
					}
				}
			}
		}
		for _, v := range q.running {
			if e.resOf(v) == k && v.Priority < j.Priority && canPreempt(v, j) && e.stoppable(v) {
				cands = append(cands, v)
			}
		}
		if len(cands) == 0 {
			continue
		}
		// Borrowed GPUs go back first: jobs of other queues, over their nominal
		// quota, before j's own queue's lower-priority jobs (Kueue's order too).
		own := func(v *Job) int {
			if v.q == q {
				return 1
			}
			return 0
		}
		slices.SortFunc(cands, func(a, b *Job) int {
			return cmp.Or(cmp.Compare(own(a), own(b)), cmp.Compare(a.Priority, b.Priority), b.AdmitTime.Compare(a.AdmitTime), cmp.Compare(b.Seq, a.Seq))
		})
		chosen := e.greedyVictims(j, k, cands)
		if len(chosen) == 0 {
			continue
		}
		kind, reason = DecisionPreempt, fmt.Sprintf("preempted for %s (priority %d) in queue %s", j.ID, j.Priority, q.cfg.Name)
		for _, v := range chosen {
			if v.q != q {
				kind = DecisionReclaim
				reason = fmt.Sprintf("borrowed %s reclaimed for %s: queue %s needs its nominal quota back", e.cards[k].Name, j.ID, q.cfg.Name)
				break
			}
		}
		return chosen, kind, reason
	}
	q.failCycle, q.failGPUs, q.failPrio = e.cycle, j.amount(), j.Priority
	return nil, "", ""
}

// greedyVictims stops candidates, in order, until j fits on card k, then spares
// the ones not needed. It leaves the engine's counts as it found them.
func (e *Engine) greedyVictims(j *Job, k int, cands []*Job) []*Job {
	var chosen []*Job
	fits := false
	for _, v := range cands {
		if v.q != j.q && v.q.used[k] <= v.q.nominal[k] {
			continue // its queue no longer borrows: what it holds is its own
		}
		e.vacate(v)
		chosen = append(chosen, v)
		if e.fitsNow(j, k) {
			fits = true
			break
		}
	}
	if fits {
		// The last one was needed (j did not fit before it); try sparing each
		// earlier one, latest first.
		for i := len(chosen) - 2; i >= 0; i-- {
			e.reoccupy(chosen[i])
			if e.fitsNow(j, k) {
				chosen = slices.Delete(chosen, i, i+1)
				continue
			}
			e.vacate(chosen[i])
		}
	}
	for _, v := range chosen {
		e.reoccupy(v)
	}
	if !fits {
		return nil
	}
	return chosen
}

// canPreempt reports whether running job v may be stopped to make room for j.
func canPreempt(v, j *Job) bool {
	p := v.q.pool
	switch {
	case v.State != StateAdmitted, !v.Spec.preemptible(), !p.Preemptible, p.Protected:
		return false
	case isInference(v.Spec.Workload) && j.Spec.Workload == schemas.WorkloadTraining:
		// Production inference is never preempted by training, whatever the pools say.
		return false
	}
	return true
}

func isInference(w string) bool {
	return w == schemas.WorkloadInference
}
