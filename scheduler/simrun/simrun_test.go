package simrun

import (
	"testing"
	"time"
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
