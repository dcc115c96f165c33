package engine

import (
	"errors"
	"testing"
	"time"
)

// TestStartWindow: a job with an off-peak window is not started outside it, even
// with GPUs free, and starts at the window's opening; a job with NotBefore waits
// for it; a bad window is refused with the field named.
func TestStartWindow(t *testing.T) {
	e, err := New(testModel())
	if err != nil {
		t.Fatal(err)
	}
	// t0 is 09:00 UTC, 10:00 in Berlin.
	night, err := e.Submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 2, Card: "H100-80GB", Window: "22:00-07:00", TimeZone: "Europe/Berlin"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	later, err := e.Submit(JobSpec{Team: "team-b", Queue: "b", GPUs: 1, Card: "H100-80GB", NotBefore: ptr(t0.Add(3 * time.Hour))}, t0)
	if err != nil {
		t.Fatal(err)
	}
	admitted := func(now time.Time) map[string]bool {
		out := map[string]bool{}
		for _, d := range e.Schedule(now) {
			if d.Kind == DecisionAdmit {
				out[d.Job.ID] = true
			}
		}
		return out
	}
	if got := admitted(t0); len(got) != 0 {
		t.Fatalf("admitted %v at 10:00 Berlin with GPUs free: both jobs must wait", got)
	}
	if night.WaitReason != "window: starts only 22:00-07:00 Europe/Berlin" {
		t.Errorf("wait reason %q", night.WaitReason)
	}
	if got := admitted(t0.Add(3 * time.Hour)); !got[later.ID] || got[night.ID] {
		t.Errorf("at 13:00 Berlin admitted %v: want the not-before job only", got)
	}
	// 20:59 UTC is 21:59 in Berlin: still outside; 21:00 UTC is 22:00: inside.
	if got := admitted(t0.Add(11*time.Hour + 59*time.Minute)); got[night.ID] {
		t.Error("started at 21:59 Berlin, before its window")
	}
	if got := admitted(t0.Add(12 * time.Hour)); !got[night.ID] {
		t.Error("not started at 22:00 Berlin, the window's opening, with GPUs free")
	}

	w, err := parseStartWindow(&JobSpec{Window: "22:00-07:00"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		hm string
		in bool
	}{{"21:59", false}, {"22:00", true}, {"23:59", true}, {"00:00", true}, {"06:59", true}, {"07:00", false}, {"12:00", false}} {
		at, _ := time.Parse(time.DateTime, "2026-12-01 "+c.hm+":00")
		if ok, _ := w.allows(at); ok != c.in {
			t.Errorf("22:00-07:00 at %s: allows %v, want %v", c.hm, ok, c.in)
		}
	}
	for _, bad := range []JobSpec{{Window: "22-07"}, {Window: "22:00-22:00"}, {Window: "25:00-07:00"}, {Window: "22:00-07:00", TimeZone: "Mars/Olympus"}} {
		bad.Team, bad.Queue, bad.GPUs = "team-a", "a", 1
		if _, err := e.Submit(bad, t0); !errors.Is(err, ErrInvalidJob) {
			t.Errorf("window %q in %q: %v, want ErrInvalidJob", bad.Window, bad.TimeZone, err)
		}
	}
}
