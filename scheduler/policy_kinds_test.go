package scheduler

import (
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// defaultPolicy returns the default policy called name, turned on (not dry-run),
// for the test model's pools.
func defaultPolicy(t *testing.T, name string) Policy {
	t.Helper()
	for _, p := range DefaultPolicies() {
		if p.Name == name {
			p.DryRun = false
			return p
		}
	}
	t.Fatalf("no default policy %q", name)
	return Policy{}
}

// TestHungJobNotifiedThenSuspended: under the default hung-suspend policy a hung
// training job's owner is told when the scheduler first sees the finding (the
// analyzer's window made it 15 minutes after it hung), and 30 minutes later the
// job is suspended (reclaimed after its pool's reclaim grace and requeued held,
// its place kept, until its owner resumes it); a hung job in a protected pool is never touched, the skip
// recorded once.
func TestHungJobNotifiedThenSuspended(t *testing.T) {
	cfg := testConfig()
	cfg.Policies = append(cfg.Policies, defaultPolicy(t, "hung-suspend"))
	h := newHarness(t, cfg)
	train := h.submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 2, Card: "H100-80GB", Workload: schemas.WorkloadTraining})
	inf := h.submit(JobSpec{Team: "serving", Queue: "online", GPUs: 1, Workload: schemas.WorkloadInference})
	h.pass()
	wantState(t, h.job(train.ID), StateAdmitted, 1)
	hung := func(job, pool string) schemas.Finding {
		return schemas.Finding{ID: "hung-" + job, Episode: 1, Kind: schemas.KindHung, Severity: "critical", Job: job, Team: "team-a",
			Pool: pool, Since: t0, FirstSeen: t0.Add(15 * time.Minute), LastSeen: t0.Add(15 * time.Minute)}
	}
	h.addFindings(hung(train.ID, "train"), hung(inf.ID, "infer"))

	// The analyzer reports a hang after 15 min flat (its window): the owner is told
	// at the scheduler's first sight of it.
	h.pass()
	notices := h.note.Notices()
	if len(notices) != 1 || notices[0].Job != train.ID || !strings.Contains(notices[0].Next, "reclaim") {
		t.Fatalf("notices when the hang is first seen: %+v", notices)
	}
	h.clock.advance(29 * time.Minute)
	h.pass()
	wantState(t, h.job(train.ID), StateAdmitted, 1)
	if len(h.exec.stops) != 0 {
		t.Fatalf("stopped within the grace: %+v", h.exec.stops)
	}
	h.clock.advance(time.Minute)
	h.pass()
	if len(h.exec.stops) != 1 || !h.exec.requeues[0] || h.exec.stops[0].Job != train.ID {
		t.Fatalf("stops %+v requeues %v, want the hung job suspended with a requeue", h.exec.stops, h.exec.requeues)
	}
	h.clock.advance(5 * time.Minute) // the train pool's reclaim grace
	h.pass()
	// Suspended: requeued with its place kept, and held until its owner resumes it.
	wantState(t, h.job(train.ID), StateQueued, 2)
	if j := h.job(train.ID); !j.Held || !strings.Contains(j.WaitReason, "resume") {
		t.Fatalf("suspended hung job: held %v, wait %q", j.Held, j.WaitReason)
	}
	h.clock.advance(time.Hour)
	h.pass()
	wantState(t, h.job(train.ID), StateQueued, 2)
	if _, err := h.svc.Resume(ContextWithActor(t.Context(), "token:team-a"), train.ID); err != nil {
		t.Fatal(err)
	}
	h.pass()
	wantState(t, h.job(train.ID), StateAdmitted, 2)
	for _, r := range h.rows(DecReclaim) {
		if r.Policy != "hung-suspend" || r.Step != 1 || r.FindingKind != string(schemas.KindHung) {
			t.Errorf("reclaim row does not name the hung policy's step and finding: %+v", r)
		}
	}

	wantState(t, h.job(inf.ID), StateAdmitted, 1)
	var skips []string
	for _, a := range h.rows(DecSkip) {
		if a.Policy == "hung-suspend" {
			skips = append(skips, jobIDOf(a.Job)+":"+a.Details["class"])
		}
	}
	if len(skips) != 1 || skips[0] != inf.ID+":protected" {
		t.Errorf("hung-suspend skips %v, want one protected skip for the online job", skips)
	}
}

// TestMemoryCapacityOnlyRecommended: under the default memory-capacity policy a
// memory_capacity finding is recommended, once, in a protected pool as in any
// other, and nothing is stopped, notified or killed; a policy that would stop such
// a job is refused by validation.
func TestMemoryCapacityOnlyRecommended(t *testing.T) {
	cfg := testConfig()
	cfg.Policies = append(cfg.Policies, defaultPolicy(t, "memory-capacity"))
	h := newHarness(t, cfg)
	inf := h.submit(JobSpec{Team: "serving", Queue: "online", GPUs: 1, Workload: schemas.WorkloadInference})
	dev := h.submit(JobSpec{Team: "x", Queue: "dev", GPUs: 1})
	h.pass()
	mc := func(job, pool string) schemas.Finding {
		return schemas.Finding{ID: "mc-" + job, Episode: 1, Kind: schemas.KindMemoryCapacity, Severity: "warning", Job: job, Team: "x",
			Pool: pool, Since: t0, FirstSeen: t0, LastSeen: t0, Recommendation: "fits a 3g.40gb MIG slice: save 57 %"}
	}
	h.addFindings(mc(inf.ID, "infer"), mc(dev.ID, "dev"))
	for range 6 {
		h.clock.advance(10 * time.Minute)
		h.pass()
	}
	got := map[string]int{}
	for _, r := range h.rows(DecRecommend) {
		if r.Policy == "memory-capacity" && r.Reason == "fits a 3g.40gb MIG slice: save 57 %" {
			got[jobIDOf(r.Job)]++
		}
	}
	if got[inf.ID] != 1 || got[dev.ID] != 1 || len(got) != 2 {
		t.Errorf("recommendations per job %v, want one for the protected online job and one for the dev job", got)
	}
	if len(h.exec.stops) != 0 || len(h.exec.kills) != 0 || len(h.note.Notices()) != 0 {
		t.Errorf("acted on memory_capacity findings: stops %v kills %v notices %v", h.exec.stops, h.exec.kills, h.note.Notices())
	}
	for _, a := range h.rows(DecSkip) {
		if a.Policy == "memory-capacity" {
			t.Errorf("memory-capacity skipped %s: %s", a.Job, a.Reason)
		}
	}
	wantState(t, h.job(inf.ID), StateAdmitted, 1)
	wantState(t, h.job(dev.ID), StateAdmitted, 1)

	for _, action := range []string{ActionReclaim, ActionCancel, ActionKill} {
		bad := testConfig()
		bad.Policies = append(bad.Policies, Policy{Name: "mc-stop", Finding: schemas.KindMemoryCapacity,
			Steps: []Step{{Action: ActionRecommend}, {Action: action, After: time.Hour}}})
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "policies[3].steps[1].action") {
			t.Errorf("a memory_capacity policy that would %s: Validate() = %v, want an error naming the step", action, err)
		}
	}
}
