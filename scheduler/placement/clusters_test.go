package placement

import (
	"errors"
	"testing"
	"time"
)

// TestClusterSet: a request naming clusters is found, and reserved, only in
// them; among those it fits now in, bin-pack takes the fullest; when it fits in
// none now, its reservation is in the one where it fits soonest.
func TestClusterSet(t *testing.T) {
	s := mustState(t, testFleet(3, 1, 8, 1)) // c0, c1, c2: one node of 8 each
	in := func(n int, cl ...string) Request { r := gpus(n); r.Clusters = cl; return r }
	busy := func(id, cluster string, n int, until time.Duration) {
		t.Helper()
		p, ok, err := s.Find(in(n, cluster))
		if err != nil || !ok || p.Cluster != cluster {
			t.Fatalf("%s: %v %v %v", id, p, ok, err)
		}
		end := t0.Add(until)
		if until == 0 {
			end = time.Time{} // no limit: never frees
		}
		if err := s.Place(id, p, end); err != nil {
			t.Fatal(err)
		}
	}
	busy("c2-2", "c2", 2, time.Hour)
	// c2 is the fullest, but the request does not name it.
	if p, ok, _ := s.Find(in(4, "c0", "c1")); !ok || p.Cluster != "c0" {
		t.Errorf("4 GPUs in c0|c1: %v %v, want c0 (c2 is not named)", p, ok)
	}
	if p, ok, _ := s.Find(in(4, "c0", "c2")); !ok || p.Cluster != "c2" {
		t.Errorf("4 GPUs in c0|c2: %v %v, want c2 (the fullest that fits)", p, ok)
	}
	// A busy until +3h, B until +1h: the reservation is in B (c1) — and in A
	// (c0) when the request names only A and C, with C full for ever.
	s.Release("c2-2")
	busy("a", "c0", 8, 3*time.Hour)
	busy("b", "c1", 8, time.Hour)
	busy("c", "c2", 8, 0)
	for _, tc := range []struct {
		clusters []string
		want     string
		at       time.Duration
	}{
		{[]string{"c0", "c1"}, "c1", time.Hour},
		{nil, "c1", time.Hour},
		{[]string{"c0", "c2"}, "c0", 3 * time.Hour},
	} {
		job := Pending{ID: "j", Req: mustCompile(t, s, in(8, tc.clusters...)), TimeLimit: time.Hour}
		for _, cfg := range []PlanConfig{DefaultPlanConfig(), {Policy: Backfill}, {Policy: StrictFIFO}} {
			d := s.Plan(t0, []Pending{job}, cfg, nil)[0]
			if d.Start || d.Placement.IsZero() || d.Placement.Cluster != tc.want || !d.ExpectedStart.Equal(t0.Add(tc.at)) {
				t.Errorf("%s, clusters %v: %s at %v, want %s at t0+%v (%s)", cfg.Policy, tc.clusters, d.Placement, d.ExpectedStart, tc.want, tc.at, d.Reason())
			}
		}
	}
	// Only c2, which never frees: no estimate.
	job := Pending{ID: "j", Req: mustCompile(t, s, in(8, "c2")), TimeLimit: time.Hour}
	if d := s.Plan(t0, []Pending{job}, DefaultPlanConfig(), nil)[0]; d.Why != WaitNoEstimate {
		t.Errorf("only c2: %s, want no estimate", d.Reason())
	}
	for _, bad := range []Request{in(1, "c9"), in(1, "c0", "c0"), {GPUs: 1, Cards: []string{"H100-80GB"}, Cluster: "c0", Clusters: []string{"c1"}}} {
		if _, err := s.Compile(bad); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("%+v: %v, want ErrInvalidRequest", bad, err)
		}
	}
}
