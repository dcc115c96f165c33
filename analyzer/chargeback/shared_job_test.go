package chargeback

import (
	"math"
	"testing"

	"github.com/gpupool/gpupool/schemas"
)

// TestSharedJobChargeback: a job on part of a GPU, as the scheduler reports
// it (gpus 0 and what it holds instead), is charged its share, not a whole
// GPU's. A job of MIG instances (mig_profile, mig_instances) gets its GPU-hours
// from telemetry (the instance weighs its compute slices, 3/7 of the A100) and
// waits 1/6 h × 3/7 GPU-hours in the queue; a job of a share of one GPU
// (gpu_fraction 250, sharing mps) waits 1/6 h × 0.25, where a whole GPU's
// would be 1/6. Compute and the chargeback_job_priced view agree.
func TestSharedJobChargeback(t *testing.T) {
	for _, tc := range []struct {
		name               string
		share              func(e *schemas.JobEvent)
		gpuHours, waitGPUh float64 // gpuHours < 0: not checked
	}{
		{"MIG 3g.20gb", func(e *schemas.JobEvent) { e.GPUs, e.MIGProfile, e.MIGInstances = 0, "3g.20gb", 1 }, 12.0 / 7, 1.0 / 6 * 3 / 7},
		{"fraction 250 mps", func(e *schemas.JobEvent) { e.GPUs, e.GPUFraction, e.Sharing = 0, 250, "mps" }, -1, 1.0 / 6 * 0.25},
	} {
		t.Run(tc.name, func(t *testing.T) {
			events := tinyJobEvents()
			for i := range events {
				if events[i].Job == "nb-1" && events[i].GPUs > 0 {
					tc.share(&events[i])
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
			if tc.gpuHours >= 0 {
				near("GPU-hours", got.GPUHours, tc.gpuHours)
			}
			near("queue-wait GPU-hours", got.QueueWaitGPUHours, tc.waitGPUh)
			if got.QueueWaitCost == nil {
				t.Fatalf("nb-1 queue-wait cost unknown, want %v at 1 USD", tc.waitGPUh)
			}
			near("queue-wait cost", *got.QueueWaitCost, tc.waitGPUh)
			if err := RefreshRange(t.Context(), s, tinyFrom, tinyTo); err != nil {
				t.Fatal(err)
			}
			view := queryFloat(t, s, "SELECT sum(queue_wait_gpu_hours) FROM chargeback_job_priced WHERE job = 'nb-1'")
			near("queue-wait GPU-hours in chargeback_job_priced", view, tc.waitGPUh)
		})
	}
}
