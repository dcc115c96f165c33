package placement

import (
	"testing"
	"time"
)

// TestShareKeepsReservation: a fraction that ends before a reservation starts
// may open a shared GPU on its GPUs, and the next pass still counts that GPU
// free once its last share ends, so the reservation does not move to when an
// unrelated long job ends; a fraction that would still run then stays off it.
// Two 8-GPU nodes: a 7-GPU job runs 0–100 s, an 8-GPU job 0–500 s; an 8-GPU
// job arrives at 10 s (reserved from 100 s), a half GPU of 10 s at 20 s and
// one of 1000 s at 25 s.
func TestShareKeepsReservation(t *testing.T) {
	s := mustState(t, testFleet(1, 2, 8, 1))
	at := func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
	if err := s.Place("seven", mustPlaceFind(t, s, gpus(7)), at(100)); err != nil {
		t.Fatal(err)
	}
	if err := s.Place("eight", mustPlaceFind(t, s, gpus(8)), at(500)); err != nil {
		t.Fatal(err)
	}
	type arrival struct {
		id    string
		req   Request
		limit time.Duration
	}
	arrivals := map[int]arrival{
		10: {"big", gpus(8), 1000 * time.Second},
		20: {"short", frac(500, MPS, 0), 10 * time.Second},
		25: {"long", frac(500, MPS, 0), 1000 * time.Second},
	}
	ends := map[string]time.Time{"seven": at(100), "eight": at(500)}
	started := map[string]time.Time{}
	var queue []Pending
	var prior *Reservation
	for _, sec := range []int{10, 20, 25, 30, 100, 500, 1100, 1525} {
		now := at(sec)
		for _, id := range s.Jobs() {
			if !ends[id].After(now) {
				if err := s.Release(id); err != nil {
					t.Fatal(err)
				}
			}
		}
		if a, ok := arrivals[sec]; ok {
			queue = append(queue, Pending{ID: a.id, Req: mustCompile(t, s, a.req), TimeLimit: a.limit, Queued: now})
		}
		for i := range queue {
			if queue[i].ID == "big" {
				queue[i].Prior = prior
			}
		}
		ds := s.Plan(now, queue, DefaultPlanConfig(), nil)
		var rest []Pending
		for i, d := range ds {
			if d.Start {
				started[d.ID], ends[d.ID] = now, now.Add(queue[i].TimeLimit)
				continue
			}
			rest = append(rest, queue[i])
			if d.ID == "big" {
				prior = d.Reservation
				if prior == nil || !prior.Start.Equal(at(100)) {
					t.Fatalf("at %d s the 8-GPU job is %s (%s), want reserved from 100 s", sec, d.Why, d.Reason())
				}
			}
		}
		queue = rest
		if err := s.check(); err != nil {
			t.Fatalf("at %d s: %v", sec, err)
		}
	}
	if got := started["big"]; !got.Equal(at(100)) {
		t.Errorf("the 8-GPU job started at %v s, want 100 s", got.Sub(t0).Seconds())
	}
	if got := started["short"]; !got.Equal(at(20)) {
		t.Errorf("the 10 s fraction started at %v s, want 20 s (it ends before the reservation)", got.Sub(t0).Seconds())
	}
	if got := started["long"]; got.Before(at(500)) {
		t.Errorf("the 1000 s fraction started at %v s, on the reserved GPUs or before any other GPU freed", got.Sub(t0).Seconds())
	}
}
