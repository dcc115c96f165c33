package scheduler

import (
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// TestResumeAfterReadmission: a job mapped to a Kubernetes Job is suspended by
// the Kubernetes executor when reclaimed, and resumed by it, once, when it is
// admitted again; the resume is audited.
func TestResumeAfterReadmission(t *testing.T) {
	kexec := &fakeExec{owner: ownedBy("team-a", "train")} // its namespace is team-a's
	h := newHarness(t, testConfig(), WithExecutor(schemas.SourceKubernetes, kexec))
	labels := map[string]string{"gpupool.io/k8s-namespace": "ml", "gpupool.io/k8s-job": "train-1"}
	a1 := h.submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 6, Card: "H100-80GB", Workload: schemas.WorkloadTraining, Labels: labels})
	h.pass()
	h.clock.advance(time.Minute)
	b1 := h.submit(JobSpec{Team: "team-b", Queue: "b", GPUs: 4, Card: "H100-80GB", Workload: schemas.WorkloadTraining})
	h.pass()
	wantState(t, h.job(a1.ID), StateQueued, 2)
	if len(kexec.stops) != 1 || !kexec.requeues[0] || kexec.stops[0].K8sJob != "train-1" || kexec.stops[0].Namespace != "ml" ||
		kexec.stops[0].Source != schemas.SourceKubernetes || len(h.exec.stops) != 0 {
		t.Fatalf("kubernetes stops %+v, other stops %+v", kexec.stops, h.exec.stops)
	}
	if len(kexec.resumes) != 0 {
		t.Fatalf("resumed while queued: %+v", kexec.resumes)
	}
	if _, err := h.svc.Finish(t.Context(), b1.ID, schemas.StatusSucceeded); err != nil {
		t.Fatal(err)
	}
	h.clock.advance(time.Minute)
	h.pass()
	wantState(t, h.job(a1.ID), StateAdmitted, 2)
	for range 3 {
		h.clock.advance(time.Minute)
		h.pass()
	}
	if len(kexec.resumes) != 1 || kexec.resumes[0].K8sJob != "train-1" || kexec.resumes[0].Namespace != "ml" {
		t.Fatalf("resumes %+v, want one of Job ml/train-1", kexec.resumes)
	}
	rows := h.rows(DecResume)
	if len(rows) != 1 || rows[0].Outcome != OutcomeOK || rows[0].Executor != "fake" || rows[0].Job != a1.ID+"/2" {
		t.Fatalf("resume rows %+v", rows)
	}
	wantSeq(t, "a1 audit", h.rowsFor(a1.ID), []string{"admit:ok", "borrow:ok", "reclaim:ok", "requeue:ok", "admit:ok", "borrow:ok", "resume:ok"})
}

// TestOwnJobsNotResumed: the scheduler's own jobs have nothing to resume (their
// owners follow the job events).
func TestOwnJobsNotResumed(t *testing.T) {
	h := newHarness(t, testConfig())
	a1 := h.submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 6, Card: "H100-80GB"})
	h.pass()
	b1 := h.submit(JobSpec{Team: "team-b", Queue: "b", GPUs: 4, Card: "H100-80GB"})
	h.pass()
	if _, err := h.svc.Finish(t.Context(), b1.ID, schemas.StatusSucceeded); err != nil {
		t.Fatal(err)
	}
	h.pass()
	wantState(t, h.job(a1.ID), StateAdmitted, 2)
	if len(h.exec.resumes) != 0 || len(h.rows(DecResume)) != 0 {
		t.Fatalf("resumes %+v rows %+v", h.exec.resumes, h.rows(DecResume))
	}
}
