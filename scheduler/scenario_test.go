package scheduler

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// TestBorrowThenReclaim: queue a borrows b's idle H100s; when b submits work that
// fits its nominal quota, a's borrowing job is stopped, requeued with its place
// kept, and readmitted once there is room again.
func TestBorrowThenReclaim(t *testing.T) {
	h := newHarness(t, testConfig())
	a1 := h.submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 6, Card: "H100-80GB", Workload: schemas.WorkloadTraining})
	h.pass()
	a1 = h.job(a1.ID)
	wantState(t, a1, StateAdmitted, 1)
	if a1.Borrowed != 2 {
		t.Fatalf("a1 borrowed %d, want 2", a1.Borrowed)
	}
	if len(h.rows(DecBorrow)) != 1 {
		t.Fatalf("borrow rows: %+v", h.rows(DecBorrow))
	}

	h.clock.advance(time.Minute)
	b1 := h.submit(JobSpec{Team: "team-b", Queue: "b", GPUs: 4, Card: "H100-80GB", Workload: schemas.WorkloadTraining})
	h.pass()
	wantState(t, h.job(b1.ID), StateAdmitted, 1)
	a1 = h.job(a1.ID)
	wantState(t, a1, StateQueued, 2)
	if a1.Seq != 1 || !a1.SubmitTime.Equal(t0) {
		t.Errorf("requeued job lost its place: seq %d submit %s", a1.Seq, a1.SubmitTime)
	}
	if len(h.exec.stops) != 1 || h.exec.stops[0].Job != a1.ID || !h.exec.requeues[0] {
		t.Fatalf("executor stops: %+v requeue %v", h.exec.stops, h.exec.requeues)
	}
	wantSeq(t, "a1 audit", h.rowsFor(a1.ID), []string{"admit:ok", "borrow:ok", "reclaim:ok", "requeue:ok"})
	wantSeq(t, "attempt 1 events", h.events(a1.ID), []string{"submit", "admit", "start", "preempt"})
	wantSeq(t, "attempt 2 events", h.events(a1.ID+"/2"), []string{"submit", "requeue"})
	for _, e := range h.pub.Events() {
		if e.Job == a1.ID+"/2" && e.Event == schemas.EventSubmit && (e.RerunOf != a1.ID || e.Attempt != 2 || e.Labels[LabelFirstSubmit] == "") {
			t.Errorf("requeue submit event: %+v", e)
		}
	}

	// a1 needs 6; a has 4 of its own and b now uses all of its quota.
	h.clock.advance(time.Hour)
	h.pass()
	wantState(t, h.job(a1.ID), StateQueued, 2)
	if _, err := h.svc.Finish(t.Context(), b1.ID, schemas.StatusSucceeded); err != nil {
		t.Fatal(err)
	}
	h.pass()
	a1 = h.job(a1.ID)
	wantState(t, a1, StateAdmitted, 2)
	if want := time.Hour.Seconds(); a1.QueueWaitS != want {
		t.Errorf("queue wait %gs, want %gs (only attempt 2 waited)", a1.QueueWaitS, want)
	}
	wantSeq(t, "attempt 2 events", h.events(a1.ID+"/2"), []string{"submit", "requeue", "admit", "start"})
	for _, e := range h.pub.Events() {
		if err := schemas.ValidateJobEvent(&e); err != nil || e.Source != schemas.SourceScheduler || e.Attempt == 0 {
			t.Errorf("event %+v: %v", e, err)
		}
	}
	for _, a := range h.rows("") {
		if a.ID == "" || a.Decision == "" || a.Outcome == "" || a.Time.IsZero() {
			t.Errorf("incomplete audit row %+v", a)
		}
	}
}

// TestReclaimGraceForCheckpointable: a checkpointable borrower keeps its GPUs for
// its pool's grace; the lender's job waits for it, without taking more victims.
func TestReclaimGraceForCheckpointable(t *testing.T) {
	h := newHarness(t, testConfig())
	a1 := h.submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 8, Card: "H100-80GB", Checkpointable: true})
	h.pass()
	b1 := h.submit(JobSpec{Team: "team-b", Queue: "b", GPUs: 2, Card: "H100-80GB"})
	h.pass()
	wantState(t, h.job(a1.ID), StateReclaiming, 1)
	b := h.job(b1.ID)
	wantState(t, b, StateQueued, 1)
	if !strings.Contains(b.WaitReason, "waiting for 1 job") {
		t.Errorf("wait reason %q", b.WaitReason)
	}
	h.clock.advance(4 * time.Minute)
	h.pass()
	wantState(t, h.job(a1.ID), StateReclaiming, 1)
	h.clock.advance(time.Minute)
	h.pass()
	wantState(t, h.job(b1.ID), StateAdmitted, 1)
	wantState(t, h.job(a1.ID), StateQueued, 2)
	if len(h.exec.stops) != 1 {
		t.Errorf("%d stops, want 1", len(h.exec.stops))
	}
}

// TestPriorityPreemptionOrder: the lowest priority goes first, then the most
// recently admitted, and no more jobs than needed.
func TestPriorityPreemptionOrder(t *testing.T) {
	cfg := testConfig()
	cfg.Queues[0].Quota["H100-80GB"] = Quota{Nominal: 8}
	cfg.Queues[1].Quota = map[string]Quota{}
	h := newHarness(t, cfg)
	var ids []string
	for _, prio := range []string{"low", "low", "normal", "normal"} {
		j := h.submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 2, Card: "H100-80GB", PriorityClass: prio})
		h.pass()
		h.clock.advance(time.Minute)
		ids = append(ids, j.ID)
	}
	urgent := h.submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 2, Card: "H100-80GB", PriorityClass: "critical"})
	h.pass()
	wantState(t, h.job(urgent.ID), StateAdmitted, 1)
	wantState(t, h.job(ids[1]), StateQueued, 2) // low, admitted last
	for _, id := range []string{ids[0], ids[2], ids[3]} {
		wantState(t, h.job(id), StateAdmitted, 1)
	}
	urgent2 := h.submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 4, Card: "H100-80GB", PriorityClass: "critical"})
	h.pass()
	wantState(t, h.job(urgent2.ID), StateAdmitted, 1)
	// The other low one, then the normal one admitted last.
	wantState(t, h.job(ids[0]), StateQueued, 2)
	wantState(t, h.job(ids[3]), StateQueued, 2)
	wantState(t, h.job(ids[2]), StateAdmitted, 1)
	if got := len(h.rows(DecPreempt)); got != 3 {
		t.Errorf("%d preempt rows, want 3", got)
	}
}

// TestInferenceNeverPreempted: neither a protected inference pool's jobs nor an
// inference job in a preemptible queue make room for training, whatever its
// priority.
func TestInferenceNeverPreempted(t *testing.T) {
	pools := []struct {
		name string
		pool Pool
	}{
		// Misconfigured as preemptible: the workload rule still protects it.
		{"preemptible pool", Pool{Name: "infer", Capacity: map[string]int{"L40S-48GB": 4}, MayLend: true, MayBorrow: true, Preemptible: true}},
		{"protected pool", Pool{Name: "infer", Capacity: map[string]int{"L40S-48GB": 4}, MayLend: true, MayBorrow: true, Protected: true}},
	}
	for _, tt := range pools {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Pools[1] = tt.pool
			h := newHarness(t, cfg)
			// Online inference borrows 2 of dev's idle L40S.
			inf := h.submit(JobSpec{Queue: "online", Team: "serving", GPUs: 6, Card: "L40S-48GB", Workload: schemas.WorkloadInference})
			h.pass()
			wantState(t, h.job(inf.ID), StateAdmitted, 1)
			// Dev wants its nominal quota back for critical training.
			tr := h.submit(JobSpec{Team: "x", Queue: "dev", GPUs: 4, Card: "L40S-48GB", Workload: schemas.WorkloadTraining, PriorityClass: "critical"})
			for range 3 {
				h.clock.advance(time.Minute)
				h.pass()
			}
			wantState(t, h.job(inf.ID), StateAdmitted, 1)
			j := h.job(tr.ID)
			wantState(t, j, StateQueued, 1)
			if !strings.Contains(j.WaitReason, "lent out") {
				t.Errorf("wait reason %q", j.WaitReason)
			}
			if len(h.exec.stops) != 0 {
				t.Fatalf("stops: %+v", h.exec.stops)
			}
		})
	}
	t.Run("inference workload in a preemptible queue", func(t *testing.T) {
		h := newHarness(t, testConfig())
		inf := h.submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 8, Card: "H100-80GB", Workload: schemas.WorkloadInference, PriorityClass: "low"})
		h.pass()
		tr := h.submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 2, Card: "H100-80GB", Workload: schemas.WorkloadTraining, PriorityClass: "critical"})
		b := h.submit(JobSpec{Team: "team-b", Queue: "b", GPUs: 2, Card: "H100-80GB", Workload: schemas.WorkloadTraining})
		h.pass()
		wantState(t, h.job(inf.ID), StateAdmitted, 1)
		wantState(t, h.job(tr.ID), StateQueued, 1)
		wantState(t, h.job(b.ID), StateQueued, 1)
		if len(h.exec.stops) != 0 {
			t.Fatalf("stops: %+v", h.exec.stops)
		}
		// An inference job wanting room may take it.
		inf2 := h.submit(JobSpec{Team: "team-b", Queue: "b", GPUs: 2, Card: "H100-80GB", Workload: schemas.WorkloadInference, PriorityClass: "critical"})
		h.pass()
		wantState(t, h.job(inf2.ID), StateAdmitted, 1)
		wantState(t, h.job(inf.ID), StateQueued, 2)
	})
}

// TestSmallJobGetsSmallCard: a job that accepts any card with ≥ 40 GiB gets the
// cheap L40S while one is free, the H100 only when none is.
func TestSmallJobGetsSmallCard(t *testing.T) {
	h := newHarness(t, testConfig())
	small := h.submit(JobSpec{Team: "x", Queue: "dev", GPUs: 1, MinMemoryGiB: 40})
	h.pass()
	if j := h.job(small.ID); j.Card != "L40S-48GB" {
		t.Fatalf("small job on %s, want L40S-48GB", j.Card)
	}
	big := h.submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 1, MinMemoryGiB: 60})
	h.pass()
	if j := h.job(big.ID); j.Card != "H100-80GB" {
		t.Fatalf("60 GiB job on %s, want H100-80GB", j.Card)
	}
	// Fill the cheap cards team a may use (its cohort lends it online's and dev's).
	var last Job
	for range 8 {
		last = h.submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 1, MinMemoryGiB: 40})
		h.pass()
	}
	if j := h.job(last.ID); j.Card != "H100-80GB" {
		t.Fatalf("with the L40S taken the job is on %s, want H100-80GB", j.Card)
	}
	cards := map[string]int{}
	for _, j := range h.svc.Jobs(JobFilter{Queue: "a"}) {
		cards[j.Card]++
	}
	if cards["L40S-48GB"] != 7 {
		t.Errorf("team a's small jobs by card: %v, want the 7 free L40S used first", cards)
	}
}

// TestSubmitRefusals: unknown queues, jobs that can never fit and bad sizes are
// refused with errors that say so.
func TestSubmitRefusals(t *testing.T) {
	h := newHarness(t, testConfig())
	tests := []struct {
		name string
		spec JobSpec
		want error
		text string
	}{
		{"unknown queue", JobSpec{Team: "team-a", Queue: "nope", GPUs: 1}, ErrUnknownQueue, `"nope"`},
		{"zero gpus", JobSpec{Team: "team-a", Queue: "a", GPUs: 0}, ErrInvalidJob, "at least 1"},
		{"unknown card", JobSpec{Team: "team-a", Queue: "a", GPUs: 1, Card: "B200"}, ErrInvalidJob, "B200"},
		{"too much memory", JobSpec{Team: "team-a", Queue: "a", GPUs: 1, MinMemoryGiB: 200}, ErrInvalidJob, "200 GiB"},
		{"over quota", JobSpec{Team: "team-b", Queue: "dev", GPUs: 7, Card: "L40S-48GB"}, ErrOverQuota, "nominal 4 + borrowable 2"},
		{"bigger than a cluster", JobSpec{Team: "team-a", Queue: "a", GPUs: 9, Card: "H100-80GB"}, ErrOverQuota, "at most 8"},
		{"wrong team", JobSpec{Team: "team-b", Queue: "a", GPUs: 1}, ErrNotAllowed, "team-a"},
		{"unknown priority", JobSpec{Team: "team-a", Queue: "a", GPUs: 1, PriorityClass: "vip"}, ErrInvalidJob, "vip"},
		{"unknown cluster", JobSpec{Team: "team-a", Queue: "a", GPUs: 1, Cluster: "mars"}, ErrInvalidJob, "mars"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := h.svc.Submit(t.Context(), tt.spec)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.text) {
				t.Fatalf("Submit = %v, want %v mentioning %q", err, tt.want, tt.text)
			}
		})
	}
	if got := len(h.rows(DecReject)); got != len(tests) {
		t.Errorf("%d reject rows, want %d", got, len(tests))
	}
}

// TestCapacityWaitReason: a job within its queue's quota that no cluster has room
// for says so, with what it needs (it once said the cluster "has 2 free", the
// job's own size).
func TestCapacityWaitReason(t *testing.T) {
	cfg := testConfig()
	cfg.Model.Clusters = []Cluster{
		{Name: "c1", Capacity: map[string]int{"H100-80GB": 4, "L40S-48GB": 4}},
		{Name: "c2", Capacity: map[string]int{"H100-80GB": 4, "L40S-48GB": 4}},
	}
	h := newHarness(t, cfg)
	a1 := h.submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 3, Card: "H100-80GB", Cluster: "c1", Workload: schemas.WorkloadTraining})
	b1 := h.submit(JobSpec{Team: "team-b", Queue: "b", GPUs: 2, Card: "H100-80GB", Cluster: "c1", Workload: schemas.WorkloadTraining})
	h.pass()
	wantState(t, h.job(a1.ID), StateAdmitted, 1)
	b := h.job(b1.ID)
	wantState(t, b, StateQueued, 1)
	if want := "capacity: cluster c1 has fewer than 2 H100-80GB free"; !strings.Contains(b.WaitReason, want) {
		t.Errorf("wait reason %q, want it to say %q", b.WaitReason, want)
	}
}
