package simrun

import (
	"math"
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

var start = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// TestEnforcementDay runs the demo fleet for two simulated days with and without
// enforcement: with it, idle dev GPUs are reclaimed and zombies killed, so less
// GPU time is held idle or by zombies, and every action is recorded.
func TestEnforcementDay(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Sim.Start, cfg.Duration = start, 48*time.Hour
	off := cfg
	off.Enforce = false
	ro, err := Run(t.Context(), off)
	if err != nil {
		t.Fatal(err)
	}
	ron, err := Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s\n%s\nactions: %v", ro, ron, ron.Actions)
	if ron.Actions["reclaim ok"] == 0 || ron.Actions["kill ok"] == 0 || ron.Actions["notify ok"] < ron.Actions["reclaim ok"] {
		t.Errorf("actions taken: %v", ron.Actions)
	}
	if len(ro.Actions) != 0 {
		t.Errorf("actions without enforcement: %v", ro.Actions)
	}
	if ron.IdleGPUh >= ro.IdleGPUh || ron.ZombieGPUh >= ro.ZombieGPUh {
		t.Errorf("idle %.1f → %.1f GPU-h, zombie %.1f → %.1f GPU-h: enforcement should cut both", ro.IdleGPUh, ron.IdleGPUh, ro.ZombieGPUh, ron.ZombieGPUh)
	}
	if ron.Actions["reclaim failed"] != 0 || ron.Actions["kill failed"] != 0 {
		t.Errorf("failed actions: %v", ron.Actions)
	}
}

// TestGateAdmitsTheFleet runs the demo fleet for a day behind the scheduler's
// gate, policies off and on: the scheduler admits every job it is handed (none
// refused), the sim executor resumes each one it admits, and with the policies
// on the idle GPU-hours fall as they do without the gate.
func TestGateAdmitsTheFleet(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Sim.Start, cfg.Duration, cfg.Admission = start, 24*time.Hour, true
	var reps [2]Report
	for i, enforce := range []bool{false, true} {
		cfg.Enforce = enforce
		var err error
		if reps[i], err = Run(t.Context(), cfg); err != nil {
			t.Fatal(err)
		}
		r := reps[i]
		t.Logf("%s\nactions: %v", r, r.Actions)
		if r.Refused != 0 {
			t.Errorf("enforce %v: %d jobs refused", enforce, r.Refused)
		}
		if r.Actions["admit ok"] == 0 || r.Actions["resume ok"] != r.Actions["admit ok"] {
			t.Errorf("enforce %v: %d admitted, %d resumed: want every admitted job resumed", enforce, r.Actions["admit ok"], r.Actions["resume ok"])
		}
		if r.Actions["resume failed"] != 0 {
			t.Errorf("enforce %v: failed resumes: %v", enforce, r.Actions)
		}
	}
	if reps[1].IdleGPUh >= reps[0].IdleGPUh || reps[1].Actions["reclaim ok"] == 0 {
		t.Errorf("idle %.1f → %.1f GPU-h, reclaims %d: the policies should act through the gate", reps[0].IdleGPUh, reps[1].IdleGPUh, reps[1].Actions["reclaim ok"])
	}
}

// TestMeterCountsGPUUnits: the fast benchmark counts capacity and allocation in
// GPU units as the pipeline does (schemas.GPUWeight): the demo fleet's 112
// allocatable units (MIG slices, time-sliced replicas) are 64 GPUs, 1,536 GPU-h
// a day, and its allocation never exceeds its capacity.
func TestMeterCountsGPUUnits(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Sim.Start, cfg.Duration = start, 6*time.Hour
	r, err := Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r.GPUs <= 64 || math.Abs(r.CapacityGPUh-64*6) > 1e-6 {
		t.Errorf("%d units, capacity %.2f GPU-h over 6 h: want more units than GPUs and 64 GPUs' capacity (384 GPU-h)", r.GPUs, r.CapacityGPUh)
	}
	if r.AllocatedGPUh <= 0 || r.AllocatedGPUh > r.CapacityGPUh || r.Utilisation > 1 {
		t.Errorf("allocated %.2f of %.2f GPU-h (utilisation %.3f): want within capacity", r.AllocatedGPUh, r.CapacityGPUh, r.Utilisation)
	}
}

// TestMeterSharesAndSlices: a time-sliced GPU held by two attempts at once
// counts once while they overlap, and a MIG slice its share of its GPU.
func TestMeterSharesAndSlices(t *testing.T) {
	m := newMeter(start)
	m.weight = map[string]float64{"GPU-shared": 1, "MIG-a30": schemas.GPUWeight("A30-24GB", "1g.6gb")}
	m.capacity = 1.25
	at := func(h float64) int64 { return start.Add(time.Duration(h * float64(time.Hour))).UnixMilli() }
	ev := func(job, event string, h float64, uuids ...string) schemas.JobEvent {
		return schemas.JobEvent{Job: job, Event: event, TimeMs: at(h), GPUUUIDs: uuids, Source: schemas.SourceKubernetes}
	}
	m.events([]schemas.JobEvent{
		ev("a", schemas.EventStart, 0, "GPU-shared"), ev("b", schemas.EventStart, 1, "GPU-shared"),
		ev("a", schemas.EventEnd, 2), ev("b", schemas.EventEnd, 3),
		ev("c", schemas.EventStart, 0, "MIG-a30"), ev("c", schemas.EventEnd, 4),
	})
	r := m.report(start.Add(4*time.Hour), 2, nil)
	if want := 3 + 0.25*4; math.Abs(r.AllocatedGPUh-want) > 1e-9 || math.Abs(r.CapacityGPUh-5) > 1e-9 {
		t.Errorf("allocated %.3f of %.3f GPU-h, want %.3f of 5", r.AllocatedGPUh, r.CapacityGPUh, want)
	}
}
