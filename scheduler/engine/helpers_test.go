package engine

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

var t0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

// testModel is a small pool: one cluster of 8 L40S (cheap, 48 GiB) and 8 H100
// (dear, 80 GiB); training queues a and b share cohort "train" with 4 H100 each;
// a protected online inference queue lends its 4 L40S to the cohort; dev has 4
// L40S in the cohort. (The scheduler's tests use the same model.)
func testModel() Model {
	return Model{
		Cards: []Card{{Name: "H100-80GB", MemoryGiB: 80, Rank: 4}, {Name: "L40S-48GB", MemoryGiB: 48, Rank: 1}},
		Clusters: []Cluster{
			{Name: "c1", Capacity: map[string]int{"H100-80GB": 8, "L40S-48GB": 8}},
		},
		Pools: []Pool{
			{Name: "train", Capacity: map[string]int{"H100-80GB": 8}, MayLend: true, MayBorrow: true, Preemptible: true, ReclaimGrace: 5 * time.Minute},
			{Name: "infer", Capacity: map[string]int{"L40S-48GB": 4}, MayLend: true, Protected: true},
			{Name: "dev", Capacity: map[string]int{"L40S-48GB": 4}, MayLend: true, MayBorrow: true, Preemptible: true},
		},
		PriorityClasses:      []PriorityClass{{Name: "critical", Value: 1000}, {Name: "normal", Value: 100}, {Name: "low", Value: 10}},
		DefaultPriorityClass: "normal",
		Queues: []Queue{
			{Name: "a", Pool: "train", Team: "team-a", Cohort: "train", Weight: 1, Quota: map[string]Quota{"H100-80GB": {Nominal: 4}}},
			{Name: "b", Pool: "train", Team: "team-b", Cohort: "train", Weight: 1, Quota: map[string]Quota{"H100-80GB": {Nominal: 4}}},
			{Name: "online", Pool: "infer", Cohort: "train", Weight: 1, Quota: map[string]Quota{"L40S-48GB": {Nominal: 4}}},
			{Name: "dev", Pool: "dev", Cohort: "train", Weight: 1, Quota: map[string]Quota{"L40S-48GB": {Nominal: 4, BorrowingLimit: ptr(2)}}},
		},
	}
}

// savedOverJSON is e's saved jobs as a job state file holds them: through
// JSON, so that a restore sees only what the file keeps.
func savedOverJSON(t *testing.T, e *Engine) []SavedJob {
	t.Helper()
	data, err := json.Marshal(e.Saved())
	if err != nil {
		t.Fatal(err)
	}
	var saved []SavedJob
	if err := json.Unmarshal(data, &saved); err != nil {
		t.Fatal(err)
	}
	return saved
}

// finishOne ends one of e's running jobs, drawn by r, as succeeded at now,
// and marks it in finished (nothing when none runs).
func finishOne(t *testing.T, e *Engine, r *rand.Rand, now time.Time, finished map[string]bool) {
	t.Helper()
	var running []*Job
	for _, q := range e.queues {
		running = append(running, q.running...)
	}
	if len(running) == 0 {
		return
	}
	j := running[r.IntN(len(running))]
	if _, err := e.Finish(j.ID, schemas.StatusSucceeded, now); err != nil {
		t.Fatal(err)
	}
	finished[j.ID] = true
}

// nodeStream is one kind of job a random stream on a placed model exercises:
// spec draws a job, mine says whether a decision's job is of the kind
// (counted), extra checks the kind's own invariants after every pass.
type nodeStream struct {
	spec  func(r *rand.Rand, e *Engine, m Model) JobSpec
	mine  func(j *Job) bool
	extra func(t *testing.T, e *Engine)
}

// runMany runs the stream over iterations random models (model, seeded by the
// iteration and seed), with shortIterations under -short, and fails when
// none of the kind's (what) jobs was admitted or stopped for others: the
// streams would not exercise it.
func (k nodeStream) runMany(t *testing.T, what string, iterations, shortIterations int, seed uint64, model func(*rand.Rand) Model) {
	t.Helper()
	if testing.Short() {
		iterations = shortIterations
	}
	admits, stops := 0, 0
	for it := range iterations {
		r := rand.New(rand.NewPCG(uint64(it), seed))
		m := model(r)
		boundClusters(&m)
		r2 := rand.New(rand.NewPCG(uint64(it), 0xc1a5))
		e, err := New(m)
		if err != nil {
			t.Fatalf("iteration %d: random model invalid: %v", it, err)
		}
		a, s := k.run(t, it, e, m, r, r2)
		admits, stops = admits+a, stops+s
	}
	if admits == 0 || stops == 0 {
		t.Fatalf("the streams admitted %d %s jobs and stopped %d: they do not exercise %s", admits, what, stops, what)
	}
	t.Logf("%s jobs admitted %d, reclaimed or preempted %d", what, admits, stops)
}

// run drives e (built from m) through 200 random steps — submits drawn by
// k.spec with cluster sets from r2, finishes, time — and then drains it; after
// every pass the shared invariants, k.extra and the journal's replay hold. It
// returns how many of the kind's jobs were admitted and stopped for others.
func (k nodeStream) run(t *testing.T, it int, e *Engine, m Model, r, r2 *rand.Rand) (admits, stops int) {
	t.Helper()
	now := t0
	submitted, finished := map[string]bool{}, map[string]bool{}
	journaled := journaledState{Jobs: []SavedJob{}}
	check := func(step int, decs []Decision) {
		t.Helper()
		for _, d := range decs {
			switch {
			case d.Kind == DecisionStop:
				finished[d.Job.ID] = true
			case !k.mine(d.Job):
			case d.Kind == DecisionAdmit:
				admits++
			case d.Kind == DecisionReclaim, d.Kind == DecisionPreempt:
				stops++
			}
		}
		checkInvariants(t, e, submitted, finished)
		k.extra(t, e)
		journaled = checkJournalAs(t, e, journaled, waitEstimates)
		if t.Failed() {
			t.Fatalf("iteration %d step %d", it, step)
		}
	}
	for step := range 200 {
		switch x := r.IntN(10); {
		case x < 5:
			spec := k.spec(r, e, m)
			randomClusters(r2, m, &spec)
			if j, err := e.Submit(spec, now); err == nil {
				submitted[j.ID] = true
			}
		case x < 7:
			finishOne(t, e, r, now, finished)
		default:
			now = now.Add(time.Duration(r.IntN(20)) * time.Minute)
		}
		decs := e.Schedule(now)
		settle(e, decs, func() bool { return r.IntN(10) == 0 })
		check(step, decs)
	}
	for round := 0; len(e.jobs) > 0; round++ {
		if round > 10*len(submitted)+100 {
			for _, j := range e.jobs {
				t.Fatalf("iteration %d: job %s (%+v) never ran: %s", it, j.ID, j.Spec, j.WaitReason)
			}
		}
		now = now.Add(10 * time.Minute)
		decs := e.Schedule(now)
		settle(e, decs, func() bool { return false })
		check(-round, decs)
		for _, q := range e.queues {
			for _, j := range slices.Clone(q.running) {
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
	return admits, stops
}
