package placement

import (
	"testing"
	"time"
)

// TestReplan: two clusters of one 8-GPU node, each running a 2-GPU job. An
// 8-GPU job reserves the node where it fits soonest; a 2-GPU job that may use
// only that node, with a limit past the reservation's start, waits without
// re-planning. With it, the job starts when the other node frees at the same
// time (the reservation moves there, same start), and is refused when the
// other node frees later (the reservation would start later).
func TestReplan(t *testing.T) {
	for _, tc := range []struct {
		name  string
		other time.Duration // when the other node's running job ends
		start bool
	}{
		{"other node free at the same time", 2 * time.Hour, true},
		{"other node free only later", 3 * time.Hour, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := func(replan int) ([]Decision, *State, string) {
				s := mustState(t, testFleet(2, 1, 8, 1))
				// The reservation's node: try each cluster first, and keep the one
				// where the 8-GPU job reserves (its tie-break is the engine's).
				for _, first := range []string{"c0", "c1"} {
					second := map[string]string{"c0": "c1", "c1": "c0"}[first]
					s = mustState(t, testFleet(2, 1, 8, 1))
					for _, run := range []struct {
						cluster string
						end     time.Duration
					}{{first, 2 * time.Hour}, {second, tc.other}} {
						req := gpus(2)
						req.Cluster = run.cluster
						pl, ok, err := s.Find(req)
						if err != nil || !ok {
							t.Fatal(ok, err)
						}
						if err := s.Place("run-"+run.cluster, pl, t0.Add(run.end)); err != nil {
							t.Fatal(err)
						}
					}
					big := Pending{ID: "big", Req: mustCompile(t, s, gpus(8)), TimeLimit: 4 * time.Hour}
					ds := s.Plan(t0, []Pending{big}, DefaultPlanConfig(), nil)
					if rs := ds[0].Reservation; rs == nil || !rs.Start.Equal(t0.Add(2*time.Hour)) {
						t.Fatalf("8-GPU job alone: %+v (%s), want a reservation from t0+2h", ds[0], ds[0].Reason())
					} else if rs.Placement.Cluster != first {
						continue
					}
					small := gpus(2)
					small.Cluster = first
					queue := []Pending{big, {ID: "small", Req: mustCompile(t, s, small), TimeLimit: 5 * time.Hour}}
					cfg := DefaultPlanConfig()
					cfg.Replan = replan
					return s.Plan(t0, queue, cfg, nil), s, first
				}
				t.Fatal("the 8-GPU job reserved neither node where the other ends later")
				return nil, nil, ""
			}

			ds, _, first := plan(0)
			if ds[1].Start {
				t.Fatalf("without re-planning the 2-GPU job started on the reserved node")
			}
			var moves int
			replanHook = func(job string, pl Placement, before, after []Reservation) {
				moves++
				if job != "small" || len(before) != 1 || len(after) != 1 || after[0].Start.After(before[0].Start) {
					t.Errorf("re-planned for %s: %+v → %+v", job, before, after)
				}
			}
			defer func() { replanHook = nil }()
			ds, s, _ := plan(4)
			if err := s.check(); err != nil {
				t.Fatal(err)
			}
			rs := ds[0].Reservation
			if rs == nil || !rs.Start.Equal(t0.Add(2*time.Hour)) {
				t.Fatalf("the 8-GPU job's reservation moved later: %+v (%s)", ds[0], ds[0].Reason())
			}
			if ds[1].Start != tc.start {
				t.Fatalf("2-GPU job started %v (%s), want %v", ds[1].Start, ds[1].Reason(), tc.start)
			}
			if !tc.start {
				if moves != 0 || rs.Placement.Cluster != first {
					t.Fatalf("refused, but the reservation moved (%d moves) to %s", moves, rs.Placement.Cluster)
				}
				if _, ok := s.Placed("small"); ok {
					t.Fatal("refused, but the 2-GPU job holds GPUs")
				}
				return
			}
			if moves != 1 || rs.Placement.Cluster == first || ds[1].Placement.Cluster != first {
				t.Fatalf("%d moves; reservation in %s, 2-GPU job in %s; want the reservation moved off %s", moves,
					rs.Placement.Cluster, ds[1].Placement.Cluster, first)
			}
			if ds[0].Placement.String() != rs.Placement.String() || !ds[0].ExpectedStart.Equal(rs.Start) {
				t.Fatalf("the 8-GPU job's decision says %s from %s, its reservation %s from %s", ds[0].Placement,
					ds[0].ExpectedStart, rs.Placement, rs.Start)
			}
			// The next pass, with the moved reservation as the prior, keeps it.
			queue := []Pending{{ID: "big", Req: mustCompile(t, s, gpus(8)), TimeLimit: 4 * time.Hour, Prior: rs}}
			next := s.Plan(t0.Add(time.Minute), queue, DefaultPlanConfig(), nil)
			if r := next[0].Reservation; r == nil || r.Start.After(rs.Start) {
				t.Fatalf("next pass: %+v (%s)", next[0], next[0].Reason())
			}
		})
	}
}
