package engine

import (
	"encoding/json"
	"math/rand/v2"
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
