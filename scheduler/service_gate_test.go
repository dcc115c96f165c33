package scheduler

import (
	"errors"
	"testing"
	"time"

	"github.com/gpupool/gpupool/scheduler/executor"
	"github.com/gpupool/gpupool/schemas"
)

// TestSubmitSuspended gates jobs of an outside system through the scheduler:
// admitted by quota, each is resumed in its system on the card and cluster it
// was admitted on, and named by its own key in the audit trail; one over the
// quota waits until an end its system reports frees the GPUs; a policy's
// reclaim stops it with requeue (its system resubmits it) and ends it here
// instead of requeueing it, so the GPUs go to the next in line.
func TestSubmitSuspended(t *testing.T) {
	cfg := testConfig()
	h := newHarness(t, cfg)
	ctx := t.Context()
	sub := func(key, queue, team string, gpus int, card string) Job {
		t.Helper()
		j, err := h.svc.SubmitSuspended(ctx, JobSpec{Team: team, Queue: queue, GPUs: gpus, Card: card, Workload: schemas.WorkloadDev},
			executor.Target{Job: key, Source: schemas.SourceKubernetes, Cluster: "c1"})
		if err != nil {
			t.Fatalf("submit %s: %v", key, err)
		}
		return j
	}
	a := sub("k8s/ns/a", "dev", "team-a", 4, "")
	b := sub("k8s/ns/b", "dev", "team-a", 4, "L40S-48GB")
	c := sub("k8s/ns/c", "dev", "team-a", 4, "L40S-48GB")
	if _, err := h.svc.SubmitSuspended(ctx, JobSpec{Team: "team-a", Queue: "dev", GPUs: 1}, executor.Target{Job: "k8s/ns/a"}); !errors.Is(err, ErrJobState) {
		t.Errorf("submit k8s/ns/a twice: %v, want ErrJobState", err)
	}
	if _, err := h.svc.SubmitSuspended(ctx, JobSpec{Team: "team-a", Queue: "dev", GPUs: 1}, executor.Target{}); !errors.Is(err, ErrInvalidJob) {
		t.Errorf("submit without a key: %v, want ErrInvalidJob", err)
	}
	h.pass()
	// dev holds 4 L40S and may borrow 2: a runs, b and c wait.
	if got := h.job(a.ID); got.State != StateAdmitted || got.Card != "L40S-48GB" {
		t.Fatalf("a: %s on %q, want admitted on L40S", got.State, got.Card)
	}
	if h.job(b.ID).State != StateQueued || h.job(c.ID).State != StateQueued {
		t.Fatalf("b %s, c %s: want both queued", h.job(b.ID).State, h.job(c.ID).State)
	}
	if len(h.exec.resumes) != 1 || h.exec.resumes[0].Job != "k8s/ns/a" || h.exec.resumes[0].Card != "L40S-48GB" || h.exec.resumes[0].Cluster != "c1" {
		t.Fatalf("resumes %+v: want k8s/ns/a on L40S-48GB in c1", h.exec.resumes)
	}
	for _, r := range h.rows(DecAdmit) {
		if r.Job != "k8s/ns/a" {
			t.Errorf("admit row names %q, want the job's own key", r.Job)
		}
	}
	if evs := h.pub.Events(); len(evs) != 0 {
		t.Errorf("published %d job events: its own system reports them", len(evs))
	}
	// Its system reports a's end: b gets the GPUs.
	h.clock.advance(time.Minute)
	if _, err := h.svc.FinishExternal(ctx, "k8s/ns/a", schemas.StatusSucceeded); err != nil {
		t.Fatal(err)
	}
	if _, err := h.svc.FinishExternal(ctx, "k8s/ns/a", schemas.StatusSucceeded); !errors.Is(err, ErrUnknownJob) {
		t.Errorf("a second end of k8s/ns/a: %v, want ErrUnknownJob", err)
	}
	h.pass()
	if h.job(b.ID).State != StateAdmitted {
		t.Fatalf("b: %s after a ended, want admitted", h.job(b.ID).State)
	}
	// A policy reclaims b (idle): stopped with requeue, and finished here.
	h.clock.advance(time.Minute)
	f := schemas.Finding{ID: "f1", Episode: 1, Kind: schemas.KindIdle, Job: "k8s/ns/b", Team: "team-a", Pool: "dev",
		Since: h.clock.now().Add(-2 * time.Hour), FirstSeen: h.clock.now().Add(-time.Hour), LastSeen: h.clock.now(), GPUUUIDs: []string{"g1", "g2", "g3", "g4"}}
	if err := h.svc.AddFindings(ctx, []schemas.Finding{f}); err != nil {
		t.Fatal(err)
	}
	h.pass()
	// dev-idle notifies 30 minutes after the scheduler first saw the finding
	// (its claimed since is ignored), and reclaims 15 minutes later.
	for _, d := range []time.Duration{30 * time.Minute, 15 * time.Minute} {
		h.clock.advance(d)
		f.LastSeen = h.clock.now()
		if err := h.svc.AddFindings(ctx, []schemas.Finding{f}); err != nil {
			t.Fatal(err)
		}
		h.pass()
	}
	if len(h.exec.stops) != 1 || h.exec.stops[0].Job != "k8s/ns/b" || !h.exec.requeues[0] {
		t.Fatalf("stops %+v requeue %v: want k8s/ns/b stopped with requeue", h.exec.stops, h.exec.requeues)
	}
	if _, err := h.svc.Job(b.ID); err == nil {
		if got := h.job(b.ID); got.State != StateFinished {
			t.Errorf("b after its reclaim: %s attempt %d, want finished (its system resubmits it)", got.State, got.Attempt)
		}
	}
	if got := h.job(c.ID); got.State != StateAdmitted {
		t.Errorf("c after b's reclaim: %s, want admitted", got.State)
	}
	if len(h.rows(DecRequeue)) != 0 {
		t.Errorf("requeue rows %+v: the scheduler must not requeue what its system resubmits", h.rows(DecRequeue))
	}
	// Its system's end of the reclaimed job comes after: nothing left to end.
	if _, err := h.svc.FinishExternal(ctx, "k8s/ns/b", schemas.StatusPreempted); !errors.Is(err, ErrUnknownJob) && !errors.Is(err, ErrJobState) {
		t.Errorf("the end of the reclaimed k8s/ns/b: %v", err)
	}
}

// TestSubmitSuspendedSurvivesRestart keeps a gated job across a restart: it is
// still known by its own key, so its system's report of its end frees its GPUs.
func TestSubmitSuspendedSurvivesRestart(t *testing.T) {
	cfg := testConfig()
	path := t.TempDir() + "/jobs.json"
	h := newHarness(t, cfg, WithStateFile(path))
	ctx := t.Context()
	if _, err := h.svc.SubmitSuspended(ctx, JobSpec{Team: "team-a", Queue: "a", GPUs: 8, Card: "H100-80GB"},
		executor.Target{Job: "slurm/c1/42", Source: schemas.SourceSlurm, Cluster: "c1"}); err != nil {
		t.Fatal(err)
	}
	h.pass()
	h.start(cfg, WithStateFile(path))
	if _, err := h.svc.SubmitSuspended(ctx, JobSpec{Team: "team-a", Queue: "a", GPUs: 1}, executor.Target{Job: "slurm/c1/42"}); !errors.Is(err, ErrJobState) {
		t.Errorf("the same key after a restart: %v, want ErrJobState", err)
	}
	j, err := h.svc.FinishExternal(ctx, "slurm/c1/42", schemas.StatusSucceeded)
	if err != nil {
		t.Fatalf("end after a restart: %v", err)
	}
	if j.State != StateFinished || !j.Resubmits || j.External == nil || j.External.Job != "slurm/c1/42" {
		t.Errorf("after its end: %+v", j)
	}
	for _, q := range h.svc.Queues() {
		if q.Name == "a" && q.Running != 0 {
			t.Errorf("queue a still runs %d jobs after the end", q.Running)
		}
	}
}

// TestBorrowedCountsTheJobsOwn counts in a job's borrowed GPUs only its own
// beyond the queue's nominal quota, not those of jobs that borrowed before it.
func TestBorrowedCountsTheJobsOwn(t *testing.T) {
	h := newHarness(t, testConfig())
	first := h.submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 6, Card: "H100-80GB"})
	h.pass()
	second := h.submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 1, Card: "H100-80GB"})
	h.pass()
	if got := h.job(first.ID); got.State != StateAdmitted || got.Borrowed != 2 {
		t.Errorf("6 GPUs on a nominal 4: %s, borrowed %d, want admitted with 2", got.State, got.Borrowed)
	}
	if got := h.job(second.ID); got.State != StateAdmitted || got.Borrowed != 1 {
		t.Errorf("1 more GPU: %s, borrowed %d, want admitted with 1", got.State, got.Borrowed)
	}
}
