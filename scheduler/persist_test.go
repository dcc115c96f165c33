package scheduler

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

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
