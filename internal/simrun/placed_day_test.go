package simrun

import (
	"testing"
	"time"
)

// TestPlacedDayRunsWherePlaced runs the demo's day with the scheduler placing
// jobs on the fleet's nodes, policies off and on: the fleet runs every job it
// admits exactly where it placed it, jobs on MIG instances included (they are
// admitted like the others, on the instances the scheduler gives them) — no
// placed GPU or instance is ever found busy (the fleet reports what holds GPUs
// and instances outside the scheduler, and keeps its own work off the
// scheduler's reserved and claimed ones), the scheduler never gave away one the
// fleet says is held, and it refused no job.
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
		t.Logf("%s\nrun where placed %d (on MIG %d); large jobs submitted 6 h before the end %d, never started %d, max wait %s",
			r, r.PlacementsRun, r.MIGPlacementsRun, r.LargeJobs, r.LargeNeverStarted, r.LargeMaxWait.Round(time.Minute))
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
		if r.MIGPlacementsRun == 0 || r.MIGPlacementsRun >= r.PlacementsRun {
			t.Errorf("enforce %v: %d jobs run on the MIG instances placed, of %d run where placed", enforce, r.MIGPlacementsRun, r.PlacementsRun)
		}
		if r.Refused != 0 {
			t.Errorf("enforce %v: the scheduler refused %d jobs (they ran unadmitted)", enforce, r.Refused)
		}
	}
}
