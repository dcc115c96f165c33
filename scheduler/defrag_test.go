package scheduler

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// defragConfig is two nodes of 4 H100 and a policy on fragmentation findings
// in pool train, after 10 minutes.
func defragConfig(dryRun bool) Config {
	c := placedTestConfig()
	c.Policies = append(c.Policies, Policy{Name: "defrag", Finding: schemas.KindFragmentation, Pools: []string{"train"}, DryRun: dryRun,
		Steps: []Step{{Action: ActionReclaim, After: 10 * time.Minute}}})
	return c
}

// fragmented fills both H100 nodes with team-b's four checkpointable 2-GPU
// jobs, ends one on each node, and queues team-a's 4-per-node gang: 4 GPUs
// free, 2 on each node, all stranded. It returns the gang.
func fragmented(h *harness) Job {
	h.t.Helper()
	var jobs []Job
	for range 4 {
		jobs = append(jobs, h.submit(JobSpec{Team: "team-b", Queue: "b", GPUs: 2, Card: "H100-80GB", Checkpointable: true, TimeLimitS: 8 * 3600}))
	}
	h.pass()
	ended := map[string]bool{}
	for _, j := range jobs {
		j = h.job(j.ID)
		if n := j.Placement[0].Node; !ended[n] {
			ended[n] = true
			if _, err := h.svc.Finish(h.t.Context(), j.ID, schemas.StatusSucceeded); err != nil {
				h.t.Fatal(err)
			}
		}
	}
	w := h.submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 4, GPUsPerNode: 4, Card: "H100-80GB", TimeLimitS: 3600})
	h.clock.advance(time.Minute) // findings are brought up to date once a minute
	h.pass()
	if got := h.job(w.ID); got.State != StateQueued {
		h.t.Fatalf("the gang is %s: the fleet is not fragmented", got.State)
	}
	return w
}

// TestFragmentationFindingDryRun: stranded GPUs with a gang waiting open a
// fragmentation finding that names the move; the policy's dry run records it
// once, after its delay, and moves nothing.
func TestFragmentationFindingDryRun(t *testing.T) {
	h := newHarness(t, defragConfig(true))
	w := fragmented(h)
	fs := h.svc.FragmentationFindings()
	if len(fs) != 1 {
		t.Fatalf("findings %+v, want one", fs)
	}
	f := fs[0]
	if f.Kind != schemas.KindFragmentation || f.Cluster != "c1" || f.Card != "H100-80GB" || f.Stranded != 4 || f.Waiting != 1 || len(f.Plans) != 1 {
		t.Fatalf("finding %+v", f)
	}
	p := f.Plans[0]
	if p.For != w.ID || len(p.Moves) != 1 || p.Moves[0].GPUs != 2 || p.Moves[0].To[0].Node == p.Moves[0].From || p.Nodes[0].Node != p.Moves[0].From {
		t.Fatalf("plan %s", p)
	}
	h.clock.advance(5 * time.Minute)
	h.pass()
	if rows := defragRows(h); len(rows) != 0 {
		t.Fatalf("acted before the policy's 10 minutes: %+v", rows)
	}
	h.clock.advance(6 * time.Minute)
	h.pass()
	h.clock.advance(2 * time.Minute)
	h.pass()
	rows := defragRows(h)
	if len(rows) != 1 {
		t.Fatalf("rows %+v, want one dry run", rows)
	}
	r := rows[0]
	if r.Outcome != OutcomeDryRun || !r.DryRun || r.Decision != ActionReclaim || r.Team != "team-a" || r.FindingID != f.ID || r.GPUs != 2 ||
		!strings.Contains(r.Reason, p.Moves[0].Job) {
		t.Fatalf("dry-run row %+v", r)
	}
	var moves []DefragMove
	if err := json.Unmarshal([]byte(r.Details["moves"]), &moves); err != nil || len(moves) != 1 || moves[0].Job != p.Moves[0].Job {
		t.Fatalf("moves detail %q: %v", r.Details["moves"], err)
	}
	if len(h.exec.stops) != 0 || h.job(w.ID).State != StateQueued {
		t.Fatal("a dry run moved a job")
	}
}

// TestFragmentationFindingMoves: carried out, the move stops the job for the
// gang with its checkpoint grace, requeues it, and the gang starts on the
// node it left while the job starts again on the other; the finding closes.
// A policy naming no pools moves jobs of any pool (it reuses the finding's
// plans, made with every job movable).
func TestFragmentationFindingMoves(t *testing.T) {
	for _, pools := range [][]string{{"train"}, nil} {
		t.Run(fmt.Sprint(pools), func(t *testing.T) { testFindingMoves(t, pools) })
	}
}

func testFindingMoves(t *testing.T, pools []string) {
	c := defragConfig(false)
	c.Policies[len(c.Policies)-1].Pools = pools
	h := newHarness(t, c)
	w := fragmented(h)
	plan := h.svc.FragmentationFindings()[0].Plans[0]
	h.clock.advance(11 * time.Minute)
	h.pass()
	rows := defragRows(h)
	if len(rows) != 1 || rows[0].Outcome != OutcomeOK || rows[0].Policy != "defrag" {
		t.Fatalf("rows %+v, want the policy's move", rows)
	}
	if len(h.exec.stops) != 1 || h.exec.graces[0] != 5*time.Minute || !h.exec.requeues[0] {
		t.Fatalf("stops %+v graces %v requeues %v: want the moved job stopped with its checkpoint grace", h.exec.stops, h.exec.graces, h.exec.requeues)
	}
	h.clock.advance(5*time.Minute + time.Second)
	h.pass()
	gang, moved := h.job(w.ID), h.job(plan.Moves[0].Job)
	if gang.State != StateAdmitted || gang.Placement[0].Node != plan.Nodes[0].Node || len(gang.Placement[0].GPUs) != 4 {
		t.Fatalf("gang %s on %+v (%s), want on %s", gang.State, gang.Placement, gang.WaitReason, plan.Nodes[0].Node)
	}
	if moved.State != StateAdmitted || moved.Placement[0].Node == plan.Moves[0].From {
		t.Fatalf("moved job %s on %+v (%s)", moved.State, moved.Placement, moved.WaitReason)
	}
	h.clock.advance(time.Minute)
	h.pass()
	if fs := h.svc.FragmentationFindings(); len(fs) != 0 {
		t.Fatalf("finding still open: %+v", fs)
	}
}

// TestFragmentationPolicyKeepsOthersJobs: a policy moves only the pools it
// names and no job carrying its opt-out label; a job that cannot checkpoint
// is never moved (the finding then names no plan and says why).
func TestFragmentationPolicyKeepsOthersJobs(t *testing.T) {
	c := defragConfig(false)
	c.Policies[len(c.Policies)-1].Pools = []string{"dev"}
	h := newHarness(t, c)
	fragmented(h)
	h.clock.advance(11 * time.Minute)
	h.pass()
	if rows := defragRows(h); len(rows) != 0 || len(h.exec.stops) != 0 {
		t.Fatalf("moved a train job under a dev policy: %+v", rows)
	}

	h = newHarness(t, placedTestConfig())
	for range 4 {
		h.submit(JobSpec{Team: "team-b", Queue: "b", GPUs: 2, Card: "H100-80GB"})
	}
	h.pass()
	for _, j := range h.svc.Jobs(JobFilter{Team: "team-b"})[:1] {
		if _, err := h.svc.Finish(t.Context(), j.ID, schemas.StatusSucceeded); err != nil {
			t.Fatal(err)
		}
	}
	h.submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 4, GPUsPerNode: 4, Card: "H100-80GB"})
	h.clock.advance(time.Minute)
	h.pass()
	fs := h.svc.FragmentationFindings()
	if len(fs) != 1 || len(fs[0].Plans) != 0 || fs[0].NoPlan == "" {
		t.Fatalf("findings %+v: want one without a plan, saying why", fs)
	}
}

func TestFragmentationPolicyValidated(t *testing.T) {
	for _, tc := range []struct {
		steps []Step
		want  string
	}{
		{[]Step{{Action: ActionNotify}}, "may recommend or reclaim"},
		{[]Step{{Action: ActionRecommend}, {Action: ActionReclaim}}, "one step"},
		{[]Step{{Action: ActionKill}}, "may recommend or reclaim"},
	} {
		c := defragConfig(false)
		c.Policies[len(c.Policies)-1].Steps = tc.steps
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("steps %+v: %v, want %q", tc.steps, err, tc.want)
		}
	}
	c := defragConfig(false)
	c.FragmentationMinStranded = -1
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "fragmentation_min_stranded") {
		t.Errorf("min stranded -1: %v", err)
	}
}

// defragRows are the audit rows of fragmentation policies.
func defragRows(h *harness) []Action {
	var out []Action
	all, err := h.rec.Actions(h.t.Context(), ActionFilter{})
	if err != nil {
		h.t.Fatal(err)
	}
	for _, a := range all {
		if a.FindingKind == string(schemas.KindFragmentation) {
			out = append(out, a)
		}
	}
	return out
}

// TestFragmentationPolicyHourlyBound: a policy's max_actions_per_hour counts
// the jobs it moved, those before a restart included (read back from the audit
// trail); past it the plan is skipped, recorded once, and carried out once the
// hour allows.
func TestFragmentationPolicyHourlyBound(t *testing.T) {
	c := defragConfig(false)
	c.Policies[len(c.Policies)-1].MaxActionsPerHour = 1
	h := newHarness(t, c)
	earlier := Action{Time: t0, Decision: ActionReclaim, Outcome: OutcomeOK, Policy: "defrag", FindingKind: string(schemas.KindFragmentation),
		Details: map[string]string{"moves": `[{"job":"old","gpus":2,"from":"h0","to":[{"node":"h1","gpus":[0,1]}]}]`}}
	earlier.fill()
	if err := h.rec.Record(t.Context(), []Action{earlier}); err != nil {
		t.Fatal(err)
	}
	h.start(c) // a restart: the move of the last hour is read back
	w := fragmented(h)
	for range 3 {
		h.clock.advance(11 * time.Minute)
		h.pass()
	}
	var skips []Action
	for _, r := range defragRows(h) {
		if r.Decision == DecSkip {
			skips = append(skips, r)
		}
	}
	if len(skips) != 1 || !strings.Contains(skips[0].Reason, "max_actions_per_hour 1") || len(h.exec.stops) != 0 {
		t.Fatalf("skips %+v, stops %d: want one skip and nothing moved within the hour", skips, len(h.exec.stops))
	}
	h.clock.advance(30 * time.Minute)
	h.pass()
	if len(h.exec.stops) != 1 {
		t.Fatalf("stops %d: want the move once the hour allows", len(h.exec.stops))
	}
	h.clock.advance(6 * time.Minute)
	h.pass()
	if got := h.job(w.ID); got.State != StateAdmitted {
		t.Fatalf("gang %s: %s", got.State, got.WaitReason)
	}
}

// TestFragmentationFindingNotPushed: the scheduler finds fragmentation
// itself; a finding of that kind pushed from outside (the analyzer's token,
// the API) is refused, so nobody can make it move jobs on their word.
func TestFragmentationFindingNotPushed(t *testing.T) {
	h := newHarness(t, defragConfig(false))
	fragmented(h)
	err := h.svc.AddFindings(t.Context(), []schemas.Finding{{ID: "f1", Kind: schemas.KindFragmentation, State: schemas.StateOpen,
		Severity: schemas.SeverityWarning, Cluster: "c1", Card: "H100-80GB", Since: t0, FirstSeen: t0, LastSeen: t0, UpdatedAt: t0}})
	if err == nil || !strings.Contains(err.Error(), "fragmentation") {
		t.Fatalf("a pushed fragmentation finding: %v, want refused", err)
	}
}
