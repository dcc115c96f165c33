package scheduler

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/gpupool/gpupool/scheduler/engine"
	"github.com/gpupool/gpupool/schemas"
)

// TestRestartKeepsJobs: with a job state file, a restarted scheduler has the
// same queued, running and reclaiming jobs, in the same places, with the same
// usage; it goes on from there (grace ends, finishes admit the next in line) and
// numbers new jobs after the old.
func TestRestartKeepsJobs(t *testing.T) {
	state := filepath.Join(t.TempDir(), "scheduler", "jobs.json")
	h := newHarness(t, testConfig(), WithStateFile(state))
	a1 := h.submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 8, Card: "H100-80GB", Checkpointable: true})
	d1 := h.submit(JobSpec{Team: "x", Queue: "dev", GPUs: 4, Card: "L40S-48GB"})
	d2 := h.submit(JobSpec{Team: "x", Queue: "dev", GPUs: 4, Card: "L40S-48GB", PriorityClass: "low"})
	h.pass()
	h.clock.advance(time.Minute)
	b1 := h.submit(JobSpec{Team: "team-b", Queue: "b", GPUs: 2, Card: "H100-80GB"})
	h.pass() // a1 reclaiming (5 min grace), b1 waits for it
	before := map[string]Job{}
	for _, id := range []string{a1.ID, d1.ID, d2.ID, b1.ID} {
		before[id] = h.job(id)
	}
	queues := h.svc.Queues()
	if _, err := os.Stat(state); err != nil {
		t.Fatalf("no state file: %v", err)
	}

	h.start(testConfig(), WithStateFile(state))
	for id, want := range before {
		got := h.job(id)
		if got.State != want.State || got.Attempt != want.Attempt || got.Seq != want.Seq || got.Card != want.Card ||
			got.Cluster != want.Cluster || !got.AdmitTime.Equal(want.AdmitTime) || got.Priority != want.Priority {
			t.Errorf("job %s after restart:\n got  %+v\n want %+v", id, got, want)
		}
	}
	wantState(t, h.job(a1.ID), StateReclaiming, 1)
	wantState(t, h.job(d2.ID), StateQueued, 1)
	for i, q := range h.svc.Queues() {
		if !reflect.DeepEqual(q, queues[i]) {
			t.Errorf("queue %s after restart: %+v, before %+v", q.Name, q, queues[i])
		}
	}
	h.clock.advance(5 * time.Minute)
	h.pass()
	wantState(t, h.job(b1.ID), StateAdmitted, 1)
	wantState(t, h.job(a1.ID), StateQueued, 2)
	if _, err := h.svc.Finish(t.Context(), d1.ID, schemas.StatusSucceeded); err != nil {
		t.Fatal(err)
	}
	h.pass()
	wantState(t, h.job(d2.ID), StateAdmitted, 1)
	n := h.submit(JobSpec{Team: "x", Queue: "dev", GPUs: 1})
	if n.Seq <= before[b1.ID].Seq || n.ID == b1.ID {
		t.Errorf("new job %s seq %d after restart; last before was %d", n.ID, n.Seq, before[b1.ID].Seq)
	}
}

// TestCorruptStateRefused: a state file that cannot be read stops Start with a
// message saying what to do, rather than starting with empty queues.
func TestCorruptStateRefused(t *testing.T) {
	state := filepath.Join(t.TempDir(), "jobs.json")
	if err := os.WriteFile(state, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	svc, err := New(testConfig(), WithStateFile(state))
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(t.Context()); err == nil {
		t.Fatal("Start accepted a corrupt state file")
	}
}

// TestRestartKeepsTheOwedCard: a restart in the middle of a reclaim keeps the
// promise it made. Job a1 runs on any card with 40 GiB; the L40S are full and
// team b borrows queue a's H100, so one of b's jobs is reclaimed for a1. The
// scheduler restarts during the reclaim's grace; when it ends, a1 takes the H100
// it was owed, although b's requeued job, earlier in line, needs them and a1's
// cheaper card would otherwise make it wait for an L40S (small jobs not on big
// cards) while b's job borrows the H100 straight back.
func TestRestartKeepsTheOwedCard(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(map[bool]string{false: "no restart", true: "restart"}[restart], func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "jobs.json")
			h := newHarness(t, testConfig(), WithStateFile(state))
			h.submit(JobSpec{Team: "x", Queue: "dev", GPUs: 4, Card: "L40S-48GB", Labels: map[string]string{"gpupool.io/no-reclaim": "true"}})
			h.submit(JobSpec{Team: "x", Queue: "online", GPUs: 4, Card: "L40S-48GB"})
			b1 := h.submit(JobSpec{Team: "team-b", Queue: "b", GPUs: 4, Card: "H100-80GB", Checkpointable: true})
			b2 := h.submit(JobSpec{Team: "team-b", Queue: "b", GPUs: 4, Card: "H100-80GB", Checkpointable: true})
			h.pass()
			if j := h.job(b2.ID); j.State != StateAdmitted || j.Borrowed != 4 {
				t.Fatalf("b2 %s borrowed %d: want admitted on queue a's 4 H100", j.State, j.Borrowed)
			}
			h.clock.advance(time.Minute)
			a1 := h.submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 4, MinMemoryGiB: 40})
			h.pass() // b2 reclaiming for a1 (5 min grace)
			wantState(t, h.job(b2.ID), StateReclaiming, 1)
			wantState(t, h.job(b1.ID), StateAdmitted, 1)
			if got := filesState(t, state).Jobs; !slices.ContainsFunc(got, func(j engine.SavedJob) bool { return j.ID == a1.ID && j.OwedCard == "H100-80GB" }) {
				t.Fatalf("state on disk does not say a1 is owed the H100: %+v", got)
			}
			if restart {
				h.start(testConfig(), WithStateFile(state))
			}
			h.clock.advance(5 * time.Minute)
			h.pass()
			a := h.job(a1.ID)
			wantState(t, a, StateAdmitted, 1)
			if a.Card != "H100-80GB" {
				t.Fatalf("a1 on %s, want the H100 reclaimed for it", a.Card)
			}
			wantState(t, h.job(b2.ID), StateQueued, 2)
		})
	}
}
