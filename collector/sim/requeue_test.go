package sim

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// queuesInPlace fails unless every cluster's queue is ordered by place.
func queuesInPlace(t *testing.T, f *Fleet) {
	t.Helper()
	for _, c := range f.clusters {
		if !slices.IsSortedFunc(c.queue, func(a, b *job) int { return int(a.placeMs - b.placeMs) }) {
			t.Fatalf("cluster %s's queue is out of place order", c.name)
		}
	}
}

// TestRequeueIdleNotebook reclaims an idle notebook with requeue: the attempt ends
// preempted, the next attempt is submitted when its owner comes back (the end of
// the idle stretch) with the first submission as its place, a requeue event
// follows, and it runs again, active first.
func TestRequeueIdleNotebook(t *testing.T) {
	cfg := testConfig(2)
	f, _ := New(cfg)
	var events []schemas.JobEvent
	at := cfg.Start
	for ; at.Before(cfg.Start.Add(4 * time.Hour)); at = at.Add(cfg.Tick) {
		events = append(events, f.Advance(at)...)
	}
	var idle *Truth
	var backMs int64 // when the owner comes back: the end of the idle stretch
	for _, tr := range f.Truth() {
		j := f.runningJobs[tr.Job]
		if tr.Kind != schemas.KindIdle || !tr.End.IsZero() || j == nil || j.kind != kindNotebook {
			continue
		}
		ranMs := f.nowMs + 1 - j.startMs
		for i, sg := range j.segs {
			if sg.idle && sg.fromMs <= ranMs && ranMs < sg.toMs && i < len(j.segs)-1 {
				idle, backMs = &tr, j.startMs+sg.toMs
			}
		}
		if idle != nil {
			break
		}
	}
	if idle == nil {
		t.Fatal("no notebook idle in a stretch that is not its last after 4 hours")
	}
	var submitted schemas.JobEvent
	for _, e := range events {
		if e.Job == idle.Job && e.Event == schemas.EventSubmit {
			submitted = e
		}
	}
	if err := f.Requeue(idle.Job, 0); err != nil {
		t.Fatal(err)
	}
	stopMs := f.nowMs + 1
	var next string
	started := false
	for end := at.Add(12 * time.Hour); at.Before(end) && !started; at = at.Add(cfg.Tick) {
		for _, e := range f.Advance(at) {
			switch {
			case e.Job == idle.Job && e.Event == schemas.EventEnd:
				if e.Status != schemas.StatusPreempted || e.ExitCode != exitSIGTERM || e.TimeMs != stopMs {
					t.Errorf("end of the stopped attempt: %+v", e)
				}
			case e.RerunOf == idle.Job && e.Event == schemas.EventSubmit:
				next = e.Job
				first := time.UnixMilli(submitted.TimeMs).UTC().Format(time.RFC3339Nano)
				if e.TimeMs != backMs || e.Attempt != submitted.Attempt+1 || e.Labels[LabelFirstSubmit] != first || e.Team != submitted.Team {
					t.Errorf("submit of the next attempt: %+v (first submit %s, owner back at %d)", e, first, backMs)
				}
			case e.Job == next && e.Event == schemas.EventRequeue:
				if e.TimeMs != backMs {
					t.Errorf("requeue event at %d, want %d", e.TimeMs, backMs)
				}
			case e.Job == next && e.Event == schemas.EventStart:
				started = true
			}
		}
		queuesInPlace(t, f)
	}
	if next == "" || !started {
		t.Fatalf("next attempt %q submitted, started %v", next, started)
	}
	for _, tr := range f.Truth() {
		if tr.Job == next && tr.Kind == schemas.KindIdle && tr.Start.UnixMilli() == backMs {
			t.Errorf("the next attempt is idle from its start: %+v", tr)
		}
		if tr.Job == idle.Job && (tr.End.IsZero() || tr.End.UnixMilli() > stopMs) {
			t.Errorf("truth of the stopped attempt outlives it: %+v", tr)
		}
	}
	if err := f.Requeue(idle.Job, 0); !errors.Is(err, ErrUnknownJob) {
		t.Errorf("requeue of a stopped attempt = %v, want ErrUnknownJob", err)
	}
}

// TestResume: the next attempt keeps the work done up to the last checkpoint; a
// notebook loses the idle stretch it was reclaimed in and comes back at its end,
// or not at all when that stretch was its last.
func TestResume(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	train := &job{durMs: hours(10), planMs: hours(10), ckptEveryMs: minutes(30), attempt: 1, key: "k8s/a/1"}
	n, away := train.resume(r, minutes(95))
	if n.durMs != hours(10)-minutes(90) || n.attempt != 2 || n.rerunOf != "k8s/a/1" || !n.requeued || away != 0 {
		t.Errorf("training resume: dur %d attempt %d rerun %q away %d", n.durMs, n.attempt, n.rerunOf, away)
	}
	nb := &job{durMs: hours(8), planMs: hours(8), segs: []segment{
		{0, minutes(30), false}, {minutes(30), hours(3), true}, {hours(3), hours(3) + minutes(20), false}, {hours(3) + minutes(20), hours(8), true},
	}}
	n, away = nb.resume(r, hours(1))
	want := []segment{{0, minutes(20), false}, {minutes(20), hours(5), true}}
	if !slices.Equal(n.segs, want) || n.durMs != hours(5) || away != hours(2) {
		t.Errorf("notebook resume: segs %v dur %d away %d, want %v, %d and %d", n.segs, n.durMs, away, want, hours(5), hours(2))
	}
	if n, _ := nb.resume(r, hours(4)); n != nil {
		t.Errorf("a notebook reclaimed in its last idle stretch comes back: %+v", n)
	}
}

// TestHolding: Holding is Truth without what has ended.
func TestHolding(t *testing.T) {
	cfg := testConfig(4)
	f, _ := New(cfg)
	f.Advance(cfg.Start.Add(10 * time.Hour))
	var want []Truth
	for _, tr := range f.Truth() {
		if tr.End.IsZero() {
			want = append(want, tr)
		}
	}
	got := f.Holding()
	if len(got) == 0 || len(got) != len(want) {
		t.Fatalf("Holding: %d conditions, Truth has %d ongoing", len(got), len(want))
	}
	for i := range got {
		if got[i].Kind != want[i].Kind || got[i].Job != want[i].Job || got[i].PID != want[i].PID || !got[i].Start.Equal(want[i].Start) {
			t.Fatalf("condition %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestRightCard: the card a wrong_card finding sends a small job to is the
// cheapest whole-GPU card of its cluster that holds its memory with a quarter to
// spare and is cheaper than its own; none when its own is the cheapest.
func TestRightCard(t *testing.T) {
	c := &cluster{classes: []*class{
		{card: &cardH100, cardType: "H100-80GB"},
		{card: &cardA100, cardType: "A100-40GB"},
		{card: &cardL40S, cardType: "L40S-45GB"},
		{card: &cardH100, cardType: "H100-80GB-MIG", mig: []migSlice{{}}},
	}}
	tests := []struct {
		mem  uint32
		card string
		want string
	}{
		{8000, "H100-80GB", "L40S-45GB"},  // the cheapest that holds it
		{40000, "H100-80GB", ""},          // 50,000 MiB needed: only the H100 holds it
		{8000, "L40S-45GB", ""},           // already on the cheapest
		{36000, "H100-80GB", "L40S-45GB"}, // 45,000 MiB needed, the L40S has 46,068
		{37000, "H100-80GB", ""},          // 46,250 MiB needed
		{8000, "A100-40GB", "L40S-45GB"},  // cheaper than its own
		{8000, "", "L40S-45GB"},           // no card of its own: the cheapest that fits
	}
	for _, tt := range tests {
		if got := c.rightCard(tt.mem, tt.card); got != tt.want {
			t.Errorf("rightCard(%d MiB, %q) = %q, want %q", tt.mem, tt.card, got, tt.want)
		}
	}
}

// TestRequeueForWrongCard: a small job on a big card requeued by a wrong_card
// policy starts again on the card the finding recommends; requeued for any
// other reason, or by the fleet, it keeps its card.
func TestRequeueForWrongCard(t *testing.T) {
	cfg := testConfig(3)
	f, _ := New(cfg)
	at := cfg.Start
	var moved, kept *job
	for ; at.Before(cfg.Start.Add(12*time.Hour)) && (moved == nil || kept == nil); at = at.Add(cfg.Tick) {
		f.Advance(at)
		for _, j := range f.runningJobs {
			if j.kind != kindWrongCard || j.c.rightCard(j.memMiB, j.card) == "" || j == moved {
				continue
			}
			if moved == nil {
				moved = j
				if err := f.RequeueFor(j.key, 0, schemas.KindWrongCard); err != nil {
					t.Fatal(err)
				}
			} else if kept == nil {
				kept = j
				if err := f.RequeueFor(j.key, 0, schemas.KindIdle); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if moved == nil || kept == nil {
		t.Fatal("fewer than two small jobs on big cards with a cheaper card in their cluster within 12 hours")
	}
	want := map[string]string{moved.key: moved.c.rightCard(moved.memMiB, moved.card), kept.key: kept.card}
	got := map[string]string{}
	for end := at.Add(24 * time.Hour); at.Before(end) && len(got) < 2; at = at.Add(cfg.Tick) {
		for _, e := range f.Advance(at) {
			if _, ok := want[e.RerunOf]; ok && e.Event == schemas.EventSubmit {
				got[e.RerunOf] = e.Card
			}
		}
	}
	for key, card := range want {
		if got[key] != card {
			t.Errorf("next attempt of %s (%s, was on %s) asks for %q, want %q", key, map[bool]string{true: "requeued for wrong_card", false: "requeued for idle"}[key == moved.key], map[bool]string{true: moved.card, false: kept.card}[key == moved.key], got[key], card)
		}
	}
	if want[moved.key] == moved.card {
		t.Fatalf("no cheaper card for %s", moved.key)
	}
}
