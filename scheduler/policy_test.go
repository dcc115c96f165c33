package scheduler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// idleFinding is the analyzer seeing job idle since t0.
func idleFinding(job, pool string) schemas.Finding {
	return schemas.Finding{ID: "idle-" + job, Episode: 1, Kind: schemas.KindIdle, Severity: "warning", Job: job, Team: "x", Pool: pool,
		Since: t0, FirstSeen: t0.Add(30 * time.Minute), LastSeen: t0.Add(30 * time.Minute)}
}

func (h *harness) addFindings(fs ...schemas.Finding) {
	h.t.Helper()
	if err := h.svc.AddFindings(h.t.Context(), fs); err != nil {
		h.t.Fatal(err)
	}
}

// TestIdleDevJobLifecycle: an idle dev job is left alone for 30 minutes, then its
// owner is notified, 15 minutes later it is reclaimed and requeued held — its
// GPU free for others — until its owner resumes it; then it is readmitted as its
// next attempt. Nothing is repeated, not even after a restart.
func TestIdleDevJobLifecycle(t *testing.T) {
	cfg := testConfig()
	h := newHarness(t, cfg)
	dev := h.submit(JobSpec{Team: "x", Queue: "dev", GPUs: 1, Card: "L40S-48GB", Workload: schemas.WorkloadDev})
	h.pass()
	wantState(t, h.job(dev.ID), StateAdmitted, 1)
	h.addFindings(idleFinding(dev.ID, "dev"))

	h.clock.advance(29 * time.Minute)
	h.pass()
	if n := len(h.note.Notices()); n != 0 {
		t.Fatalf("notified after 29 min: %d notices", n)
	}
	h.clock.advance(time.Minute)
	h.pass()
	notices := h.note.Notices()
	if len(notices) != 1 || notices[0].Job != dev.ID || !strings.Contains(notices[0].Next, "reclaim") {
		t.Fatalf("notices at 30 min: %+v", notices)
	}
	h.clock.advance(14 * time.Minute)
	h.pass()
	wantState(t, h.job(dev.ID), StateAdmitted, 1)

	h.clock.advance(time.Minute)
	h.pass()
	// Reclaimed and requeued, held: the GPU is free, and it does not take it back.
	wantState(t, h.job(dev.ID), StateQueued, 2)
	if j := h.job(dev.ID); !j.Held || !strings.Contains(j.WaitReason, "resume") {
		t.Fatalf("reclaimed dev job: held %v, wait %q", j.Held, j.WaitReason)
	}
	h.clock.advance(time.Hour)
	h.pass()
	wantState(t, h.job(dev.ID), StateQueued, 2)
	if _, err := h.svc.Resume(ContextWithActor(t.Context(), "token:x"), dev.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := h.svc.Resume(t.Context(), dev.ID); !errors.Is(err, ErrJobState) {
		t.Errorf("resuming a job not held = %v, want ErrJobState", err)
	}
	h.pass()
	wantState(t, h.job(dev.ID), StateAdmitted, 2)
	if len(h.exec.stops) != 1 || !h.exec.requeues[0] {
		t.Fatalf("stops %+v requeue %v", h.exec.stops, h.exec.requeues)
	}
	if f := h.exec.stops[0].Finding; f != schemas.KindIdle {
		t.Errorf("the executor was told the stop is for a %q finding, want idle (its owner's notice names it)", f)
	}
	wantSeq(t, "dev job audit", h.rowsFor(dev.ID), []string{"admit:ok", "notify:ok", "reclaim:ok", "requeue:ok", "resume:ok", "admit:ok"})
	for _, a := range h.rows(DecReclaim) {
		if a.Policy != "dev-idle" || a.Step != 1 || a.FindingID != "idle-"+dev.ID {
			t.Errorf("reclaim row does not name its policy step and finding: %+v", a)
		}
	}

	before := len(h.rows(""))
	for range 3 {
		h.clock.advance(time.Hour)
		h.pass()
	}
	h.start(cfg) // a restart reads the steps taken back from the audit trail
	h.addFindings(idleFinding(dev.ID, "dev"))
	h.pass()
	if after := len(h.rows("")); after != before {
		t.Errorf("%d more rows after the chain finished and a restart: %+v", after-before, h.rows("")[before:])
	}
}

// TestDryRunChangesNothing: a dry-run policy records each step it would take, on
// schedule, and touches nothing.
func TestDryRunChangesNothing(t *testing.T) {
	cfg := testConfig()
	cfg.Policies[0].DryRun = true
	h := newHarness(t, cfg)
	dev := h.submit(JobSpec{Team: "x", Queue: "dev", GPUs: 1})
	h.pass()
	h.addFindings(idleFinding(dev.ID, "dev"))
	for range 6 {
		h.clock.advance(10 * time.Minute)
		h.pass()
	}
	wantState(t, h.job(dev.ID), StateAdmitted, 1)
	if len(h.note.Notices()) != 0 || len(h.exec.stops) != 0 {
		t.Fatalf("dry run acted: notices %v stops %v", h.note.Notices(), h.exec.stops)
	}
	wantSeq(t, "dry-run audit", h.rowsFor(dev.ID), []string{"admit:ok", "notify:dry_run", "reclaim:dry_run"})
	for _, a := range h.rows(DecReclaim) {
		if !a.DryRun || !strings.Contains(a.Reason, "would reclaim") || !a.Time.Equal(t0.Add(50*time.Minute)) {
			t.Errorf("dry-run row %+v", a)
		}
	}
}

// TestRateLimitHolds: at most two kills an hour per pool; the rest wait, each
// skip recorded once, and go when the hour allows.
func TestRateLimitHolds(t *testing.T) {
	h := newHarness(t, testConfig())
	h.exec.owner = processIn("dev")
	for i := range 4 {
		h.addFindings(schemas.Finding{ID: fmt.Sprintf("z%d", i), Kind: schemas.KindZombie, Pool: "dev", Node: "gpu-a-001", PID: uint32(100 + i),
			Since: t0, FirstSeen: t0})
	}
	h.clock.advance(10 * time.Minute)
	h.pass()
	h.clock.advance(time.Minute)
	h.pass()
	if len(h.exec.kills) != 2 {
		t.Fatalf("%d kills in the first hour, want 2", len(h.exec.kills))
	}
	if got := len(h.rows(DecSkip)); got != 2 {
		t.Fatalf("%d skip rows, want one per held-back finding: %+v", got, h.rows(DecSkip))
	}
	if r := h.rows(DecSkip)[0]; !strings.Contains(r.Reason, "rate limit") || r.Details["class"] != "rate_limit" {
		t.Errorf("skip row %+v", r)
	}
	h.clock.advance(58 * time.Minute)
	h.pass()
	if len(h.exec.kills) != 2 {
		t.Fatalf("%d kills within the hour of the first two, want 2", len(h.exec.kills))
	}
	h.clock.advance(time.Minute)
	h.pass()
	if len(h.exec.kills) != 4 {
		t.Fatalf("%d kills once the hour passed, want 4", len(h.exec.kills))
	}
	if h.exec.kills[3].PID != 103 || h.exec.kills[0].PID != 100 {
		t.Errorf("kills out of order: %+v", h.exec.kills)
	}
}

// TestProtectedAndOptedOut: a protected pool's job and a job with the opt-out
// label are never acted on; each skip is recorded once, with the reason.
func TestProtectedAndOptedOut(t *testing.T) {
	h := newHarness(t, testConfig())
	inf := h.submit(JobSpec{Team: "serving", Queue: "online", GPUs: 1, Workload: schemas.WorkloadInference})
	opt := h.submit(JobSpec{Team: "x", Queue: "dev", GPUs: 1, Labels: map[string]string{"gpupool.io/no-reclaim": "true"}})
	h.pass()
	h.addFindings(idleFinding(inf.ID, "infer"), idleFinding(opt.ID, "dev"))
	for range 8 {
		h.clock.advance(10 * time.Minute)
		h.pass()
	}
	wantState(t, h.job(inf.ID), StateAdmitted, 1)
	wantState(t, h.job(opt.ID), StateAdmitted, 1)
	if len(h.note.Notices()) != 0 || len(h.exec.stops) != 0 {
		t.Fatalf("acted: %v %v", h.note.Notices(), h.exec.stops)
	}
	skips := map[string]string{}
	for _, a := range h.rows(DecSkip) {
		if a.Policy != "" {
			skips[a.Job] += a.Details["class"] + " "
		}
	}
	if skips[inf.ID] != "protected " || skips[opt.ID] != "opt_out " {
		t.Errorf("skips: %v", skips)
	}
}

// TestWrongCardRecommends: a recommendation only, once.
func TestWrongCardRecommends(t *testing.T) {
	h := newHarness(t, testConfig())
	h.addFindings(schemas.Finding{ID: "w1", Kind: schemas.KindWrongCard, Job: "k8s/ml/abc", Pool: "dev", FirstSeen: t0, Recommendation: "use L40S-48GB"})
	h.pass()
	h.pass()
	rows := h.rows(DecRecommend)
	if len(rows) != 1 || rows[0].Reason != "use L40S-48GB" || len(h.exec.stops) != 0 {
		t.Fatalf("recommend rows %+v stops %v", rows, h.exec.stops)
	}
}

// TestFailedActionRetriedThenReported: the executor is retried with backoff (on
// synctest's fake clock), then the failure is recorded, the job stays where it
// was, and the next pass tries again.
func TestFailedActionRetriedThenReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig()
		h := &harness{t: t, clock: &fakeClock{t: t0}, rec: NewMemoryRecorder(), pub: &MemoryPublisher{}, note: &MemoryNotifier{},
			exec: &fakeExec{failures: 3}}
		h.start(cfg, WithSleep(sleepCtx)) // real timers, in the bubble
		dev := h.submit(JobSpec{Team: "x", Queue: "dev", GPUs: 1})
		h.pass()
		h.addFindings(idleFinding(dev.ID, "dev"))
		h.clock.advance(30 * time.Minute)
		h.pass() // notify
		h.clock.advance(15 * time.Minute)
		start := time.Now()
		h.pass() // the reclaim fails 3 times
		if waited := time.Since(start); waited != 3*time.Second {
			t.Errorf("backoff waited %s, want 1s + 2s", waited)
		}
		wantState(t, h.job(dev.ID), StateAdmitted, 1)
		failed := h.rows(DecReclaim)
		if len(failed) != 1 || failed[0].Outcome != OutcomeFailed || failed[0].Tries != 3 || !strings.Contains(failed[0].Reason, "connection refused") {
			t.Fatalf("reclaim rows %+v", failed)
		}
		if ev := h.events(dev.ID); len(ev) != 3 {
			t.Errorf("events of the job %v: a failed stop must not show it moved", ev)
		}
		h.clock.advance(time.Minute)
		h.pass()                                    // the executor works again
		wantState(t, h.job(dev.ID), StateQueued, 2) // held until its owner resumes it
	})
}

// TestStartReadsHistoryFailure: a scheduler that cannot read its audit trail does
// not start (it could act twice).
func TestStartReadsHistoryFailure(t *testing.T) {
	svc, err := New(testConfig(), WithRecorder(brokenRecorder{}))
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(t.Context()); err == nil || !strings.Contains(err.Error(), "audit trail") {
		t.Fatalf("Start = %v", err)
	}
}

type brokenRecorder struct{}

func (brokenRecorder) Record(context.Context, []Action) error { return fmt.Errorf("store down") }
func (brokenRecorder) Actions(context.Context, ActionFilter) ([]Action, error) {
	return nil, fmt.Errorf("store down")
}

// TestRunAdmitsSoonAfterSubmit: Run passes on its interval and also right after a
// submit (synctest's clock: the test takes no real time).
func TestRunAdmitsSoonAfterSubmit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig()
		cfg.Interval = time.Hour
		svc, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- svc.Run(ctx) }()
		synctest.Wait()
		j, err := svc.Submit(ctx, JobSpec{Team: "x", Queue: "dev", GPUs: 1})
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got, _ := svc.Job(j.ID); got.State != StateAdmitted {
			t.Fatalf("job %s right after submit, with the next interval an hour away", got.State)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}
