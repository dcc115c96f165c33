package scheduler

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// downRecorder refuses every row; reading works.
type downRecorder struct{ *MemoryRecorder }

func (downRecorder) Record(context.Context, []Action) error { return errors.New("store down") }

// downPublisher refuses every event.
type downPublisher struct{}

func (downPublisher) Publish(context.Context, []schemas.JobEvent) error {
	return errors.New("bus down")
}

// TestFailuresWithoutMetrics: a Service built without metrics (a library user,
// the demo's harnesses) counts nothing when the audit store or the bus fails, and
// goes on — it used to read the nil Metrics' counter before checking for nil.
func TestFailuresWithoutMetrics(t *testing.T) {
	clock := &fakeClock{t: t0}
	svc, err := New(testConfig(), WithClock(clock.now), WithRecorder(downRecorder{NewMemoryRecorder()}),
		WithPublisher(downPublisher{}), WithNotifier(&MemoryNotifier{}),
		WithExecutor("", &fakeExec{}), WithExecutor(schemas.SourceScheduler, &fakeExec{}),
		WithSleep(func(context.Context, time.Duration) error { return nil }), WithJobIDPrefix(""))
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	j, err := svc.Submit(t.Context(), JobSpec{Team: "team-a", Queue: "a", GPUs: 1, Card: "H100-80GB", Workload: schemas.WorkloadTraining})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Pass(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got, _ := svc.Job(j.ID); got.State != StateAdmitted {
		t.Fatalf("job %s with the store and bus down: %s, want admitted all the same", j.ID, got.State)
	}
}
