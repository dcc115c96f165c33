package chargeback

import (
	"math"
	"testing"
)

// TestFractionJobChargeback: a job of a share of one GPU, as the scheduler
// reports it (gpu_fraction 250, sharing mps, gpus 0), waits 1/6 h × 0.25
// GPU-hours in the queue, not a whole GPU's 1/6; Compute and the
// chargeback_job_priced view agree.
func TestFractionJobChargeback(t *testing.T) {
	events := tinyJobEvents()
	for i := range events {
		if events[i].Job == "nb-1" && events[i].GPUs > 0 {
			events[i].GPUs, events[i].GPUFraction, events[i].Sharing = 0, 250, "mps"
		}
	}
	s := openMigrated(t)
	loadTinyFleetWith(t, s, events)
	rows, err := Compute(t.Context(), s, tinyFrom, tinyTo)
	if err != nil {
		t.Fatal(err)
	}
	var got *Row
	for i := range rows {
		if rows[i].Job == "nb-1" {
			got = &rows[i]
		}
	}
	if got == nil {
		t.Fatalf("no row of nb-1 in %+v", rows)
	}
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("nb-1 %s = %v, want %v", what, got, want)
		}
	}
	near("queue-wait GPU-hours", got.QueueWaitGPUHours, 1.0/6*0.25)
	if err := RefreshRange(t.Context(), s, tinyFrom, tinyTo); err != nil {
		t.Fatal(err)
	}
	view := queryFloat(t, s, "SELECT sum(queue_wait_gpu_hours) FROM chargeback_job_priced WHERE job = 'nb-1'")
	near("queue-wait GPU-hours in chargeback_job_priced", view, 1.0/6*0.25)
}
