package simrun

import (
	"testing"
	"time"
)

// TestPlacedDayRunsWherePlaced runs the demo's day with the scheduler placing
// jobs on the fleet's nodes, policies off and on: the fleet runs every job it
// admits exactly where it placed it — no placed GPU is ever found busy (the
// fleet reports what holds GPUs outside the scheduler, and keeps its own work
// off the scheduler's reserved and claimed GPUs) and the scheduler never gave
// away a GPU the fleet says is held.
func TestPlacedDayRunsWherePlaced(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Sim.Start, cfg.Duration, cfg.Admission, cfg.Placed = start, 24*time.Hour, true, true
	cfg.Sim.NodeLossPerNodeDay, cfg.Sim.PreemptShare = 0.003, 0.1 // the demo's
	for _, enforce := range []bool{false, true} {
		cfg.Enforce = enforce
		r, err := Run(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s\nrun where placed %d; large jobs submitted 6 h before the end %d, never started %d, max wait %s",
			r, r.PlacementsRun, r.LargeJobs, r.LargeNeverStarted, r.LargeMaxWait.Round(time.Minute))
		for _, s := range r.LargeStarved {
			t.Logf("never started: %s", s)
		}
		if r.PlacementMisses != 0 || r.Conflicts != 0 {
			t.Errorf("enforce %v: %d placed jobs found a GPU busy %v, %d GPUs held outside the scheduler while it had given them away",
				enforce, r.PlacementMisses, r.MissReasons, r.Conflicts)
		}
		if r.PlacementsRun == 0 || r.Actions["admit ok"] < r.PlacementsRun {
			t.Errorf("enforce %v: %d run where placed, %d admitted", enforce, r.PlacementsRun, r.Actions["admit ok"])
		}
	}
}
