package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/scheduler/placement"
)

// TestPlacedMinAgeReserveCounts: the model's placement.min_age_reserve is
// measured from when the job joined the queue — the engine hands the planner
// each job's QueuedAt (without it, every job counted as old enough and the
// setting did nothing).
func TestPlacedMinAgeReserveCounts(t *testing.T) {
	m := placedModel(1)
	m.Placement = placement.PlanConfig{Policy: placement.Backfill, MinAgeReserve: time.Hour}
	e := mustEngine(t, m)
	for range 4 {
		mustSubmit(t, e, JobSpec{Team: "t", Queue: "a", GPUs: 1, TimeLimitS: 4 * 3600}, t0)
	}
	e.Schedule(t0)
	big := mustSubmit(t, e, JobSpec{Team: "t", Queue: "a", GPUs: 8, GPUsPerNode: 8, TimeLimitS: 3600}, t0.Add(time.Minute))
	e.Schedule(t0.Add(2 * time.Minute))
	if big.State != StateQueued || len(big.Reserved) != 0 || strings.Contains(big.WaitReason, "reserved") {
		t.Fatalf("a job queued 1 min ago under min_age_reserve 1h: %s, reserved %v (%s)", big.State, big.Reserved, big.WaitReason)
	}
	e.Schedule(t0.Add(62 * time.Minute))
	if len(big.Reserved) == 0 || !strings.Contains(big.WaitReason, "reserved") {
		t.Fatalf("past min_age_reserve: reserved %v (%s)", big.Reserved, big.WaitReason)
	}
}
