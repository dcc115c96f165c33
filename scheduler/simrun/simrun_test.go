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
