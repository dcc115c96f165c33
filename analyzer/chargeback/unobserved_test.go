package chargeback

import (
	"context"
	"testing"

	"github.com/gpupool/gpupool/schemas"
)

// TestJobWithoutTelemetry: a job known only from its job events (its GPUs never
// reported a sample) is all unobserved — never used, never idle — live, after a
// Refresh, and in chargeback_daily; the jobs that were sampled have no
// unobserved time; and capacity still reconciles: used + idle + unmeasured +
// unallocated = capacity, with the ghost job's unmeasured time all unobserved.
func TestJobWithoutTelemetry(t *testing.T) {
	ctx := context.Background()
	s := openMigrated(t)
	ghost := []schemas.JobEvent{
		{TimeMs: at(0, 0).UnixMilli(), Job: "ghost", Event: schemas.EventSubmit, Source: schemas.SourceSlurm, Cluster: "c1",
			Team: "dark", Project: "p", GPUs: 2, Card: "H100-80GB", Attempt: 1},
		{TimeMs: at(0, 0).UnixMilli(), Job: "ghost", Event: schemas.EventStart, Source: schemas.SourceSlurm, Cluster: "c1",
			Nodes: []string{"node-9"}, GPUUUIDs: []string{"GPU-z1", "GPU-z2"}, Attempt: 1},
		{TimeMs: at(2, 0).UnixMilli(), Job: "ghost", Event: schemas.EventEnd, Source: schemas.SourceSlurm, Cluster: "c1",
			Status: schemas.StatusSucceeded, Attempt: 1},
	}
	loadTinyFleetWith(t, s, append(tinyJobEvents(), ghost...))
	check := func(when string) {
		t.Helper()
		rows, err := Compute(ctx, s, tinyFrom, tinyTo)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, r := range rows {
			if r.Job != "ghost" {
				if r.UnobservedGPUHours > 1e-9 {
					t.Errorf("%s: %s, sampled throughout, has %g unobserved GPU-hours", when, r.Job, r.UnobservedGPUHours)
				}
				continue
			}
			found = true
			if !near(r.GPUHours, 4) || !near(r.UnobservedGPUHours, 4) || !near(r.UnmeasuredGPUHours, 4) ||
				r.UsedGPUHours != 0 || r.IdleGPUHours != 0 {
				t.Errorf("%s: ghost: gpu %g used %g idle %g unmeasured %g unobserved %g; want 4 GPU-hours, all unobserved",
					when, r.GPUHours, r.UsedGPUHours, r.IdleGPUHours, r.UnmeasuredGPUHours, r.UnobservedGPUHours)
			}
		}
		if !found {
			t.Fatalf("%s: no chargeback row for the ghost job: %+v", when, rows)
		}
	}
	check("live")
	if err := Refresh(ctx, s, tinyTo); err != nil {
		t.Fatal(err)
	}
	check("refreshed")

	res, err := s.Query(ctx, `SELECT sum(gpu_hours) AS g, sum(used_gpu_hours) AS u, sum(unobserved_gpu_hours) AS o
FROM chargeback_daily WHERE team = 'dark'`, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := res.Float(0, "g")
	u, _ := res.Float(0, "u")
	o, _ := res.Float(0, "o")
	if !near(g, 4) || u != 0 || !near(o, 4) {
		t.Errorf("chargeback_daily for the ghost's team: gpu %g used %g unobserved %g; want 4, 0, 4", g, u, o)
	}
	res, err = s.Query(ctx, `SELECT sum(gpu_hours) AS cap, sumIf(gpu_hours, job = '') AS unalloc,
    sumIf(used_gpu_hours, job != '') AS used, sumIf(idle_gpu_hours, job != '') AS idle,
    sumIf(unmeasured_gpu_hours, job != '') AS unmeasured, sumIf(unobserved_gpu_hours, job = 'ghost') AS ghost
FROM chargeback_hourly_current`, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := func(name string) float64 { v, _ := res.Float(0, name); return v }
	if sum := f("used") + f("idle") + f("unmeasured") + f("unalloc"); !near(sum, f("cap")) {
		t.Errorf("used %g + idle %g + unmeasured %g + unallocated %g = %g, capacity %g",
			f("used"), f("idle"), f("unmeasured"), f("unalloc"), sum, f("cap"))
	}
	if !near(f("ghost"), 4) {
		t.Errorf("the ghost's unobserved GPU-hours in chargeback_hourly_current: %g, want 4", f("ghost"))
	}
}
