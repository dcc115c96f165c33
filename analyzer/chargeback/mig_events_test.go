package chargeback

import (
	"math"
	"testing"
)

// TestMIGJobChargeback: a job of MIG instances, as the scheduler reports it
// (mig_profile, mig_instances, gpus 0), is charged its instances' share of
// the GPU, not a whole GPU's: its GPU-hours come from telemetry (the instance
// weighs its compute slices, 3/7 of the A100), and its queue wait is 1/6 h ×
// 3/7 waiting GPU-hours, where a whole GPU's would be 1/6. The view and the
// chargeback_job_priced view agree.
func TestMIGJobChargeback(t *testing.T) {
	events := tinyJobEvents()
	for i := range events {
		if events[i].Job == "nb-1" && events[i].GPUs > 0 {
			events[i].GPUs, events[i].MIGProfile, events[i].MIGInstances = 0, "3g.20gb", 1
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
	near("GPU-hours", got.GPUHours, 12.0/7)
	near("queue-wait GPU-hours", got.QueueWaitGPUHours, 1.0/6*3/7)
	if got.QueueWaitCost == nil {
		t.Fatal("nb-1 queue-wait cost unknown, want 1/6 × 3/7 at 1 USD")
	}
	near("queue-wait cost", *got.QueueWaitCost, 1.0/6*3/7)
	if err := RefreshRange(t.Context(), s, tinyFrom, tinyTo); err != nil {
		t.Fatal(err)
	}
	view := queryFloat(t, s, "SELECT sum(queue_wait_gpu_hours) FROM chargeback_job_priced WHERE job = 'nb-1'")
	near("queue-wait GPU-hours in chargeback_job_priced", view, 1.0/6*3/7)
}
