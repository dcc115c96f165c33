package placement

import (
	"testing"
	"time"
)

// TestPriorReservationHolds: a job the caller orders ahead of a reserved one
// (one owed reclaimed GPUs, say) is kept off the reserved GPUs unless its
// limit ends by the reservation's start; at its turn the reserved job gets its
// reservation back. Without Prior, the owed job took the reserved node with a
// limit past the start and moved the start out by a day (issue 36, the
// demo's eu-west-b H100 node).
func TestPriorReservationHolds(t *testing.T) {
	s := mustState(t, testFleet(1, 1, 8, 1))
	// Two GPUs run until t0+4h; the node's other six are free.
	run, ok, err := s.Find(gpus(2))
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if err := s.Place("run", run, t0.Add(4*time.Hour)); err != nil {
		t.Fatal(err)
	}
	big := Pending{ID: "big", Req: mustCompile(t, s, gpus(8)), TimeLimit: 10 * time.Hour}
	ds := s.Plan(t0, []Pending{big}, DefaultPlanConfig(), nil)
	prior := ds[0].Reservation
	if prior == nil || !prior.Start.Equal(t0.Add(4*time.Hour)) {
		t.Fatalf("first pass: %+v, want a reservation from t0+4h", ds[0])
	}
	for _, tc := range []struct {
		limit time.Duration
		start bool
	}{
		{limit: 20 * time.Hour, start: false}, // past the start: kept off
		{limit: 3 * time.Hour, start: true},   // ends by the start: may use it
	} {
		owed := Pending{ID: "owed", Req: mustCompile(t, s, gpus(2)), TimeLimit: tc.limit}
		big.Prior = prior
		ds := s.Plan(t0.Add(time.Minute), []Pending{owed, big}, DefaultPlanConfig(), nil)
		if ds[0].Start != tc.start {
			t.Errorf("owed job of limit %v ahead of the reserved one: start %v (%s), want %v", tc.limit, ds[0].Start, ds[0].Reason(), tc.start)
		}
		if ds[1].Reservation == nil || !ds[1].Reservation.Start.Equal(t0.Add(4*time.Hour)) {
			t.Errorf("limit %v: the reserved job's reservation moved: %+v (%s)", tc.limit, ds[1], ds[1].Reason())
		}
		if ds[0].Start {
			s.Release("owed")
		}
		// Without Prior the owed job takes the node and the start moves out.
		big.Prior = nil
		ds = s.Plan(t0.Add(time.Minute), []Pending{owed, big}, DefaultPlanConfig(), nil)
		if !ds[0].Start {
			t.Fatalf("without a prior reservation the owed job should start: %s", ds[0].Reason())
		}
		s.Release("owed")
	}
	// The victim search's test: FindAround keeps a long job off the reserved
	// GPUs and lets a short one on.
	if _, ok, _ := s.FindAround(t0, gpus(2), 20*time.Hour, []*Reservation{prior}); ok {
		t.Error("FindAround placed a job past the reservation's start on reserved GPUs")
	}
	if _, ok, _ := s.FindAround(t0, gpus(2), time.Hour, []*Reservation{prior}); !ok {
		t.Error("FindAround refused a job that ends before the reservation")
	}
}
