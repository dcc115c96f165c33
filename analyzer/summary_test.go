package analyzer

import (
	"math"
	"testing"
	"time"

	"github.com/gpupool/gpupool/ingest"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
)

// summaryAttempt is one job of TestSummary's store: it holds gpu (of card, MIG
// profile mig) from t0 for an hour, then ends with status and exit code.
type summaryAttempt struct {
	job, gpu, card, mig, status string
	exit                        int32
}

func loadSummaryStore(t *testing.T, as []summaryAttempt) store.Store {
	t.Helper()
	s := newStore(t)
	l := ingest.NewLoader(s, 100000)
	var evs []schemas.JobEvent
	for _, a := range as {
		base := schemas.JobEvent{Job: a.job, Cluster: "c1", Source: schemas.SourceKubernetes, Attempt: 1, Team: "ml", Project: "p", Pool: "train"}
		sub, st, end := base, base, base
		sub.TimeMs, sub.Event, sub.GPUs, sub.Workload = t0.Add(-time.Minute).UnixMilli(), schemas.EventSubmit, 1, schemas.WorkloadTraining
		st.TimeMs, st.Event, st.Nodes, st.GPUUUIDs = t0.UnixMilli(), schemas.EventStart, []string{"n1"}, []string{a.gpu}
		end.TimeMs, end.Event, end.Status, end.ExitCode = t0.Add(time.Hour).UnixMilli(), schemas.EventEnd, a.status, a.exit
		evs = append(evs, sub, st, end)
		for at := t0; at.Before(t0.Add(time.Hour)); at = at.Add(time.Minute) {
			g := schemas.NewGPUSample()
			g.TimeMs, g.GPUUUID, g.Card, g.MIGProfile, g.Model, g.FBTotalMiB = at.UnixMilli(), a.gpu, a.card, a.mig, "NVIDIA "+a.card, 10000
			g.GrEngineActive, g.SMActive, g.PowerW = 0.5, 0.5, 100
			if err := l.AddSamples(t.Context(), &schemas.SampleBatch{Cluster: "c1", Node: "n1", GPUs: []schemas.GPUSample{g}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := l.AddJobs(t.Context(), evs); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSummaryFailures: "Failures by reason" lists failures only (no succeeded
// attempts, though their share is of every ended attempt), and an attempt the
// pool's scheduler reclaimed is schemas.ReasonPoolReclaim, apart from a
// preemption by someone else.
func TestSummaryFailures(t *testing.T) {
	s := loadSummaryStore(t, []summaryAttempt{
		{job: "k8s/ml/ok-1", gpu: "GPU-1", card: "H100-80GB", status: schemas.StatusSucceeded},
		{job: "k8s/ml/ok-2", gpu: "GPU-2", card: "H100-80GB", status: schemas.StatusSucceeded},
		{job: "k8s/ml/reclaimed", gpu: "GPU-3", card: "H100-80GB", status: schemas.StatusPreempted},
		{job: "k8s/ml/spot", gpu: "GPU-4", card: "H100-80GB", status: schemas.StatusPreempted},
		{job: "k8s/ml/bug", gpu: "GPU-5", card: "H100-80GB", status: schemas.StatusFailed, exit: 1},
	})
	if err := s.Exec(t.Context(), `INSERT INTO actions (ts, id, decision, outcome, reason, policy, job, attempt, executor)
VALUES ({ts:DateTime64(3, 'UTC')}, 'reclaim-1', 'reclaim', 'ok', 'idle dev job reclaimed', 'dev-idle', 'k8s/ml/reclaimed', 1, 'sim')`,
		store.Params{"ts": TimeParam(t0.Add(59 * time.Minute))}); err != nil {
		t.Fatal(err)
	}
	sum, err := Summarize(t.Context(), s, t0, t0.Add(2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for i := range sum.Failures.Rows {
		reason, _ := sum.Failures.String(i, "reason")
		share, _ := sum.Failures.Float(i, "share_of_ended")
		n, _ := sum.Failures.Int(i, "n")
		if n != 1 {
			t.Errorf("%s: %d attempts, want 1", reason, n)
		}
		got[reason] = share
	}
	want := map[string]float64{schemas.ReasonPoolReclaim: 0.2, "preempted": 0.2, "user_error": 0.2}
	if len(got) != len(want) {
		t.Errorf("failures %v, want %v (no succeeded row)", got, want)
	}
	for r, w := range want {
		if math.Abs(got[r]-w) > 1e-9 {
			t.Errorf("%s: share %v, want %v of the 5 ended attempts", r, got[r], w)
		}
	}
}

// TestSummaryGPUHoursMIG: a MIG slice counts as its share of its GPU, by the
// one definition of a GPU unit (schemas.GPUWeight): a 1g slice of an A30 is a
// quarter, of an H100 a seventh.
func TestSummaryGPUHoursMIG(t *testing.T) {
	s := loadSummaryStore(t, []summaryAttempt{
		{job: "k8s/ml/a30", gpu: "MIG-A30", card: "A30-24GB", mig: "1g.6gb", status: schemas.StatusSucceeded},
		{job: "k8s/ml/h100-slice", gpu: "MIG-H100", card: "H100-80GB", mig: "1g.10gb", status: schemas.StatusSucceeded},
		{job: "k8s/ml/h100", gpu: "GPU-H100", card: "H100-80GB", status: schemas.StatusSucceeded},
	})
	sum, err := Summarize(t.Context(), s, t0, t0.Add(2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for i := range sum.GPUHours.Rows {
		card, _ := sum.GPUHours.String(i, "card")
		h, _ := sum.GPUHours.Float(i, "gpu_hours")
		got[card] = h
	}
	want := map[string]float64{
		"A30-24GB":  math.Round(100*schemas.GPUWeight("A30-24GB", "1g.6gb")) / 100,
		"H100-80GB": math.Round(100*(1+schemas.GPUWeight("H100-80GB", "1g.10gb"))) / 100,
	}
	if want["A30-24GB"] != 0.25 {
		t.Fatalf("schemas.GPUWeight of an A30 1g slice %v, want 0.25", want["A30-24GB"])
	}
	for card, w := range want {
		if math.Abs(got[card]-w) > 0.011 {
			t.Errorf("%s: %v GPU-hours, want %v (all: %v)", card, got[card], w, got)
		}
	}
}
