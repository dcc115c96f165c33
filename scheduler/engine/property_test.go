package engine

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// randomModel draws a pool: 1–3 clusters, 2–4 card types, 2–4 pools with random
// rules, 2–8 queues in 1–3 cohorts (or none) with random quotas and limits.
func randomModel(r *rand.Rand) Model {
	var m Model
	nCards := 2 + r.IntN(3)
	for i := range nCards {
		m.Cards = append(m.Cards, Card{Name: fmt.Sprintf("card%d", i), MemoryGiB: 16 * (i + 1), Rank: i})
	}
	physical := map[string]int{}
	for c := range 1 + r.IntN(3) {
		cl := Cluster{Name: fmt.Sprintf("c%d", c), Capacity: map[string]int{}}
		for _, card := range m.Cards {
			n := r.IntN(3) * 4
			cl.Capacity[card.Name] = n
			physical[card.Name] += n
		}
		m.Clusters = append(m.Clusters, cl)
	}
	nPools := 2 + r.IntN(3)
	left := map[string]int{}
	for k, v := range physical {
		left[k] = v
	}
	for p := range nPools {
		pl := Pool{Name: fmt.Sprintf("p%d", p), Capacity: map[string]int{}, MayLend: r.IntN(4) > 0, MayBorrow: r.IntN(4) > 0,
			ReclaimGrace: time.Duration(r.IntN(3)) * 5 * time.Minute, MaxJobDuration: time.Duration(r.IntN(3)) * 2 * time.Hour}
		switch r.IntN(4) {
		case 0:
			pl.Protected = true
		case 1:
		default:
			pl.Preemptible = true
		}
		for _, card := range m.Cards {
			n := r.IntN(left[card.Name] + 1)
			pl.Capacity[card.Name] = n
			left[card.Name] -= n
		}
		m.Pools = append(m.Pools, pl)
	}
	m.PriorityClasses = []PriorityClass{{Name: "high", Value: 100}, {Name: "mid", Value: 50}, {Name: "low", Value: 0}}
	m.DefaultPriorityClass = "mid"
	poolLeft := map[string]map[string]int{}
	for _, p := range m.Pools {
		poolLeft[p.Name] = map[string]int{}
		for k, v := range p.Capacity {
			poolLeft[p.Name][k] = v
		}
	}
	for q := range 2 + r.IntN(7) {
		p := m.Pools[r.IntN(len(m.Pools))]
		qc := Queue{Name: fmt.Sprintf("q%d", q), Pool: p.Name, Weight: float64(1 + r.IntN(3)), Quota: map[string]Quota{}}
		if c := r.IntN(4); c > 0 {
			qc.Cohort = fmt.Sprintf("cohort%d", c)
		}
		for _, card := range m.Cards {
			n := r.IntN(poolLeft[p.Name][card.Name] + 1)
			poolLeft[p.Name][card.Name] -= n
			quota := Quota{Nominal: n}
			if p.MayBorrow && r.IntN(2) == 0 {
				quota.BorrowingLimit = ptr(r.IntN(6))
			}
			if r.IntN(2) == 0 {
				quota.LendingLimit = ptr(r.IntN(n + 1))
			}
			qc.Quota[card.Name] = quota
		}
		m.Queues = append(m.Queues, qc)
	}
	return m
}

// checkInvariants recomputes usage from the jobs and checks the engine's promises.
func checkInvariants(t *testing.T, e *Engine, submitted map[string]bool, finished map[string]bool) {
	t.Helper()
	nc := len(e.cards)
	clusterUse := map[string][]int{}
	for _, c := range e.clusters {
		clusterUse[c.name] = make([]int, nc)
	}
	seen := map[string]int{}
	for _, q := range e.queues {
		used := make([]int, nc)
		for _, j := range q.running {
			seen[j.ID]++
			if !j.Running() || j.q != q {
				t.Fatalf("job %s in %s's running list is %s", j.ID, q.cfg.Name, j.State)
			}
			k, ok := e.jobRes(j)
			switch {
			case !ok:
				t.Fatalf("job %s runs on %s %q, which the engine does not count", j.ID, j.Card, j.Spec.MIGProfile)
			case j.Spec.MIGProfile == "" && j.Spec.GPUFraction == 0 && k >= e.nWhole, j.Spec.MIGProfile != "" && e.resProfile[k] != j.Spec.MIGProfile:
				t.Fatalf("job %s (MIG profile %q) is counted on %s", j.ID, j.Spec.MIGProfile, e.cards[k].Name)
			}
			used[k] += j.amount()
			clusterUse[j.Cluster][k] += j.amount()
			if j.Spec.Card != "" && j.Card != j.Spec.Card || e.cards[k].MemoryGiB < j.Spec.MinMemoryGiB {
				t.Fatalf("job %s asked for %q/%d GiB and runs on %s", j.ID, j.Spec.Card, j.Spec.MinMemoryGiB, j.Card)
			}
			if j.Spec.Cluster != "" && j.Cluster != j.Spec.Cluster {
				t.Fatalf("job %s pinned to %s runs in %s", j.ID, j.Spec.Cluster, j.Cluster)
			}
			if !specAllows(e.model, j.Spec, j.Cluster) {
				t.Fatalf("job %s (team %s, clusters %q %v, locality %v) runs in %s, which it may not use", j.ID, j.Spec.Team, j.Spec.Cluster, j.Spec.Clusters, j.Spec.Locality, j.Cluster)
			}
		}
		for _, j := range q.pending {
			seen[j.ID]++
			if j.resv != nil && !specAllows(e.model, j.Spec, j.resv.Placement.Cluster) {
				t.Fatalf("job %s (team %s, clusters %q %v, locality %v) is reserved in %s, which it may not use", j.ID, j.Spec.Team, j.Spec.Cluster, j.Spec.Clusters, j.Spec.Locality, j.resv.Placement.Cluster)
			}
			if j.State != StateQueued {
				t.Fatalf("job %s in %s's queue is %s", j.ID, q.cfg.Name, j.State)
			}
		}
		for k := range nc {
			if used[k] != q.used[k] {
				t.Fatalf("queue %s card %s: counted %d, jobs hold %d", q.cfg.Name, e.cards[k].Name, q.used[k], used[k])
			}
			if q.borrowLimit[k] != unlimited && used[k] > q.nominal[k]+q.borrowLimit[k] {
				t.Fatalf("queue %s uses %d %s, past nominal %d + borrowing limit %d", q.cfg.Name, used[k], e.cards[k].Name, q.nominal[k], q.borrowLimit[k])
			}
		}
	}
	cohorts := map[*cohortState]bool{}
	for _, q := range e.queues {
		cohorts[q.cohort] = true
	}
	for c := range cohorts {
		for k := range nc {
			borrowed, lendable := 0, 0
			for _, q := range c.queues {
				b, l := q.contribution(k, q.used[k])
				borrowed += b
				lendable += l
			}
			if borrowed != c.borrowed[k] || lendable != c.lendable[k] {
				t.Fatalf("cohort %s card %d: sums %d/%d, recomputed %d/%d", c.name, k, c.borrowed[k], c.lendable[k], borrowed, lendable)
			}
			if borrowed > lendable {
				t.Fatalf("cohort %q borrows %d %s but lends only %d (lending limits broken)", c.name, borrowed, e.cards[k].Name, lendable)
			}
		}
	}
	for _, c := range e.clusters {
		for k := range nc {
			if e.resMode[k] != "" { // the whole GPUs fractions share: ⌈Σ / 1000⌉ per mode
				clusterUse[c.name][e.resCard[k]] += (clusterUse[c.name][k] + 999) / 1000
			}
		}
		for k := range nc {
			if clusterUse[c.name][k] > c.capacity[k] || clusterUse[c.name][k] != c.used[k] {
				t.Fatalf("cluster %s card %s: jobs hold %d, counted %d, capacity %d", c.name, e.cards[k].Name, clusterUse[c.name][k], c.used[k], c.capacity[k])
			}
		}
	}
	for id := range submitted {
		switch {
		case finished[id]:
			if seen[id] != 0 {
				t.Fatalf("finished job %s is still in a queue", id)
			}
		case seen[id] != 1:
			t.Fatalf("job %s is in %d places (lost or duplicated)", id, seen[id])
		}
	}
}

// settle carries out an engine's stop orders the way the service does: confirm
// (or, when fail says so, keep the job running).
func settle(e *Engine, decs []Decision, fail func() bool) {
	for _, d := range decs {
		switch d.Kind {
		case DecisionReclaim, DecisionPreempt, DecisionExpire:
			if fail() {
				_ = e.KeepRunning(d.Job.ID)
			} else {
				_ = e.Confirm(d.Job.ID)
			}
		}
	}
}

// TestRandomStreams drives random models with random job streams — submits of
// every shape, finishes, failing executors, time passing for graces and limits —
// and checks after every pass that capacity, quotas and lending limits hold and
// that no job is lost; then it drains each pool and checks every job ran.
func TestRandomStreams(t *testing.T) {
	iterations := 300
	if testing.Short() {
		iterations = 50
	}
	kinds := map[DecisionKind]int{}
	workloads := []string{schemas.WorkloadTraining, schemas.WorkloadInference, schemas.WorkloadBatchInference, schemas.WorkloadDev, ""}
	for it := range iterations {
		r := rand.New(rand.NewPCG(uint64(it), 0x5eed))
		m := randomModel(r)
		boundClusters(&m)
		r2 := rand.New(rand.NewPCG(uint64(it), 0xc1a5))
		if err := m.Validate(); err != nil {
			t.Fatalf("iteration %d: random model invalid: %v", it, err)
		}
		e, err := New(m)
		if err != nil {
			t.Fatal(err)
		}
		now := t0
		submitted, finished := map[string]bool{}, map[string]bool{}
		journaled := journaledState{Jobs: []SavedJob{}}
		fail := func() bool { return r.IntN(10) == 0 }
		for step := range 400 {
			switch x := r.IntN(10); {
			case x < 5:
				q := m.Queues[r.IntN(len(m.Queues))]
				spec := JobSpec{
					Team: cmp.Or(q.Team, "t"), Project: q.Project, Queue: q.Name, GPUs: 1 + r.IntN(8), PriorityClass: []string{"", "high", "low"}[r.IntN(3)],
					Checkpointable: r.IntN(2) == 0, Workload: workloads[r.IntN(len(workloads))],
				}
				if r.IntN(3) == 0 {
					spec.Preemptible = ptr(false)
				}
				if r.IntN(2) == 0 {
					spec.Card = m.Cards[r.IntN(len(m.Cards))].Name
				} else {
					spec.MinMemoryGiB = r.IntN(40)
				}
				if r.IntN(5) == 0 {
					spec.Cluster = m.Clusters[r.IntN(len(m.Clusters))].Name
				}
				randomClusters(r2, m, &spec)
				if r.IntN(4) == 0 {
					// Short limits: expiries (and, in protected pools, their skips) are
					// common, whatever the admission order.
					spec.TimeLimitS = int64(30+r.IntN(90)) * 60
				}
				if j, err := e.Submit(spec, now); err == nil {
					submitted[j.ID] = true
				}
			case x < 7:
				finishOne(t, e, r, now, finished)
			default:
				now = now.Add(time.Duration(r.IntN(10)) * time.Minute)
			}
			decs := e.Schedule(now)
			for _, d := range decs {
				kinds[d.Kind]++
				if d.Kind == DecisionStop {
					finished[d.Job.ID] = true // ran past its limit
				}
			}
			settle(e, decs, fail)
			checkInvariants(t, e, submitted, finished)
			journaled = checkJournal(t, e, journaled)
			if t.Failed() {
				t.Fatalf("iteration %d step %d", it, step)
			}
		}
		// Drain: finish whatever runs until nothing is left; every job must run.
		for round := 0; len(e.jobs) > 0; round++ {
			if round > 10*len(submitted)+100 {
				for _, j := range e.jobs {
					t.Fatalf("iteration %d: job %s (%+v) never ran: %s", it, j.ID, j.Spec, j.WaitReason)
				}
			}
			now = now.Add(10 * time.Minute)
			decs := e.Schedule(now)
			for _, d := range decs {
				if d.Kind == DecisionStop {
					finished[d.Job.ID] = true
				}
			}
			settle(e, decs, func() bool { return false })
			checkInvariants(t, e, submitted, finished)
			journaled = checkJournal(t, e, journaled)
			for _, q := range e.queues {
				for _, j := range append([]*Job(nil), q.running...) {
					if j.State == StateAdmitted {
						_, _ = e.Finish(j.ID, schemas.StatusSucceeded, now)
						finished[j.ID] = true
					}
				}
			}
		}
		if len(finished) != len(submitted) {
			t.Fatalf("iteration %d: %d submitted, %d finished", it, len(submitted), len(finished))
		}
	}
	for _, k := range []DecisionKind{DecisionAdmit, DecisionReclaim, DecisionPreempt, DecisionRequeue, DecisionExpire, DecisionStop, DecisionSkip} {
		if kinds[k] == 0 {
			t.Errorf("the random streams never produced a %s decision: %v", k, kinds)
		}
	}
	t.Logf("decisions: %v", kinds)
}

// journaledState is the engine's jobs as a journal of TakeDirty's changes
// rebuilds them: what the scheduler's state file and journal hold.
type journaledState struct {
	Seq  uint64     `json:"seq"`
	Jobs []SavedJob `json:"jobs"`
}

// checkJournal applies the engine's changes since the last call (TakeDirty) to
// st, as a restart replays the journal over the snapshot, and fails unless that
// gives the engine's whole state (Saved): a change that forgot to mark its job
// would be lost by a restart.
func checkJournal(t *testing.T, e *Engine, st journaledState) journaledState {
	t.Helper()
	return checkJournalAs(t, e, st, func(*SavedJob) {})
}

// checkJournalAs is checkJournal comparing the jobs as norm leaves them.
func checkJournalAs(t *testing.T, e *Engine, st journaledState, norm func(*SavedJob)) journaledState {
	t.Helper()
	if jobs, gone, ok := e.TakeDirty(st.Seq); ok {
		st.Seq = max(st.Seq, e.Seq())
		for _, j := range jobs {
			if i := slices.IndexFunc(st.Jobs, func(s SavedJob) bool { return s.ID == j.ID }); i >= 0 {
				st.Jobs[i] = j
			} else {
				st.Jobs = append(st.Jobs, j)
			}
		}
		st.Jobs = slices.DeleteFunc(st.Jobs, func(s SavedJob) bool { return slices.Contains(gone, s.ID) })
		slices.SortFunc(st.Jobs, func(a, b SavedJob) int { return cmp.Compare(a.Seq, b.Seq) })
	}
	normed := func(s journaledState) journaledState {
		s.Jobs = slices.Clone(s.Jobs)
		for i := range s.Jobs {
			norm(&s.Jobs[i])
		}
		return s
	}
	got, _ := json.Marshal(normed(st))
	want, _ := json.Marshal(normed(journaledState{Seq: e.Seq(), Jobs: e.Saved()}))
	if string(got) != string(want) {
		t.Errorf("journal replayed:\n%s\nengine state:\n%s", got, want)
	}
	return st
}
