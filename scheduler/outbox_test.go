package scheduler

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gpupool/gpupool/schemas"
)

// switchPublisher is a bus that can be down: while it is, every publish fails
// (and is counted); while up, it keeps what it is given, in order.
type switchPublisher struct {
	mu       sync.Mutex
	down     bool
	attempts int
	events   []schemas.JobEvent
}

func (p *switchPublisher) Publish(_ context.Context, events []schemas.JobEvent) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.attempts++
	if p.down {
		return errors.New("bus down")
	}
	p.events = append(p.events, events...)
	return nil
}

func (p *switchPublisher) set(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
}

// seen is what was published, as job/event lines in order.
func (p *switchPublisher) seen() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.events))
	for _, e := range p.events {
		out = append(out, e.Job+":"+e.Event)
	}
	return out
}

// waitFor polls cond for up to 10 s (the durable mode publishes in the
// background).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestOutboxKeepsEventsThroughOutage: while the bus is down, the job events of
// submits and of a pass stay in the outbox (counted in the gauge, the failed
// publish counted), and nothing is published out of order meanwhile; once the
// bus is back and the backoff has passed, the next pass publishes every event,
// in the order the changes happened, and the outbox is empty.
func TestOutboxKeepsEventsThroughOutage(t *testing.T) {
	pub := &switchPublisher{down: true}
	reg := prometheus.NewPedanticRegistry()
	h := newHarness(t, testConfig(), WithPublisher(pub), WithMetrics(NewMetrics(reg)))
	a := h.submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 1, Card: "H100-80GB"})
	b := h.submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 1, Card: "H100-80GB"})
	h.pass()
	if got := pub.seen(); len(got) != 0 {
		t.Fatalf("published while the bus was down: %v", got)
	}
	held := h.svc.outbox.held()
	if held < 4 {
		t.Fatalf("outbox holds %d events, want the 2 submits and 2 admits at least", held)
	}
	if g := testutil.ToFloat64(h.svc.metrics.outboxEvents); int(g) != held {
		t.Errorf("gauge gpupool_scheduler_outbox_events %v, want %d", g, held)
	}
	// Back up, but inside the backoff: the pass does not try yet.
	pub.set(false)
	before := pub.attempts
	h.pass()
	if pub.attempts != before || len(pub.seen()) != 0 {
		t.Fatalf("published inside the backoff: %d attempts, %v", pub.attempts-before, pub.seen())
	}
	h.clock.advance(2 * time.Minute)
	h.pass()
	got := pub.seen()
	want := []string{a.AttemptKey() + ":" + schemas.EventSubmit, b.AttemptKey() + ":" + schemas.EventSubmit}
	if len(got) != held || !prefix(got, want) {
		t.Fatalf("published after the outage %v, want %d events starting %v", got, held, want)
	}
	if n := h.svc.outbox.held(); n != 0 {
		t.Errorf("outbox holds %d events after the bus came back", n)
	}
	if g := testutil.ToFloat64(h.svc.metrics.outboxEvents); g != 0 {
		t.Errorf("gauge after: %v, want 0", g)
	}
	if r := testutil.ToFloat64(h.svc.metrics.publishRetries); r != 1 {
		t.Errorf("publish retries %v, want 1", r)
	}
}

func prefix(got, want []string) bool {
	if len(got) < len(want) {
		return false
	}
	for i := range want {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

// TestOutboxSurvivesRestart: with a job state file, events the bus never took
// are in the state on disk; a scheduler started again over it publishes them
// (its first pass), and one started a third time publishes none again: the
// marker line says they went out.
func TestOutboxSurvivesRestart(t *testing.T) {
	state := filepath.Join(t.TempDir(), "jobs.json")
	down := &switchPublisher{down: true}
	h := newHarness(t, testConfig(), WithStateFile(state), WithPublisher(down))
	j := h.submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 1, Card: "H100-80GB"})
	waitFor(t, "the failed publish", func() bool {
		down.mu.Lock()
		defer down.mu.Unlock()
		return down.attempts > 0
	})

	up := &switchPublisher{}
	h2 := &harness{t: t, clock: h.clock, rec: NewMemoryRecorder(), pub: &MemoryPublisher{}, note: &MemoryNotifier{}, exec: &fakeExec{}}
	h2.start(testConfig(), WithStateFile(state), WithPublisher(up))
	h2.pass()
	waitFor(t, "the submit event published after the restart", func() bool {
		return len(up.seen()) >= 2 // the submit, then the admit of the pass
	})
	if got := up.seen(); got[0] != j.AttemptKey()+":"+schemas.EventSubmit {
		t.Fatalf("after the restart published %v, want %s's submit first", got, j.ID)
	}
	waitFor(t, "the outbox emptied", func() bool { return h2.svc.outbox.held() == 0 })

	again := &switchPublisher{}
	h3 := &harness{t: t, clock: h.clock, rec: NewMemoryRecorder(), pub: &MemoryPublisher{}, note: &MemoryNotifier{}, exec: &fakeExec{}}
	h3.start(testConfig(), WithStateFile(state), WithPublisher(again))
	h3.pass()
	if got := again.seen(); len(got) != 0 {
		t.Fatalf("a third start published again %v: the marker was lost", got)
	}
}

// TestOutboxCap: past its cap the outbox drops its oldest events, counts them
// and publishes the rest once the bus is back.
func TestOutboxCap(t *testing.T) {
	pub := &switchPublisher{down: true}
	h := newHarness(t, testConfig(), WithPublisher(pub), WithMetrics(NewMetrics(nil)), WithOutboxCap(2))
	var jobs []Job
	for range 3 {
		jobs = append(jobs, h.submit(JobSpec{Team: "team-a", Queue: "dev", GPUs: 1, Card: "L40S-48GB"}))
	}
	if n := h.svc.outbox.held(); n != 2 {
		t.Fatalf("outbox holds %d events, want its cap 2", n)
	}
	if d := testutil.ToFloat64(h.svc.metrics.outboxDrops); d != 1 {
		t.Errorf("dropped %v events, want 1", d)
	}
	pub.set(false)
	h.clock.advance(2 * time.Minute)
	h.svc.flushOutbox(t.Context())
	want := []string{jobs[1].AttemptKey() + ":" + schemas.EventSubmit, jobs[2].AttemptKey() + ":" + schemas.EventSubmit}
	if got := pub.seen(); !prefix(got, want) || len(got) != 2 {
		t.Fatalf("published %v, want %v", got, want)
	}
}
