package scheduler

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// fragRecorder is a MemoryRecorder that tells each RecordFragmentation call on
// calls (its error, nil when the samples were kept, and its latest sample's
// time) and fails while down is set.
type fragRecorder struct {
	*MemoryRecorder
	mu    sync.Mutex
	down  bool
	calls chan fragCall
}

type fragCall struct {
	err error
	at  time.Time
}

func newFragRecorder() *fragRecorder {
	return &fragRecorder{MemoryRecorder: NewMemoryRecorder(), calls: make(chan fragCall, 100)}
}

func (r *fragRecorder) setDown(down bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.down = down
}

func (r *fragRecorder) RecordFragmentation(ctx context.Context, samples []FragmentationSample) error {
	r.mu.Lock()
	down := r.down
	r.mu.Unlock()
	var err error
	if down {
		err = errors.New("store down")
	} else {
		err = r.MemoryRecorder.RecordFragmentation(ctx, samples)
	}
	var at time.Time
	for _, s := range samples {
		if s.Time.After(at) {
			at = s.Time
		}
	}
	r.calls <- fragCall{err, at}
	return err
}

// waitFor waits for the RecordFragmentation call that kept the samples of time
// at (a call's message can arrive after its samples are visible, so the samples
// alone cannot say which calls are still to come); the samples of every earlier
// pass are recorded by then.
func (r *fragRecorder) waitFor(t *testing.T, at time.Time) []FragmentationSample {
	t.Helper()
	r.callAt(t, at, func(c fragCall) bool { return c.err == nil })
	return r.FragmentationSamples()
}

// callAt waits for the RecordFragmentation call whose latest sample is of time
// at and that ok accepts, passing over earlier calls.
func (r *fragRecorder) callAt(t *testing.T, at time.Time, ok func(fragCall) bool) fragCall {
	t.Helper()
	for {
		select {
		case c := <-r.calls:
			if c.at.Equal(at) && ok(c) {
				return c
			}
		case <-t.Context().Done():
			t.Fatalf("no sample of %s recorded", at)
		}
	}
}

// TestFragmentationRecorded: a placing scheduler writes its fragmentation
// figure after a pass, at most every FragmentationEvery, one sample per
// cluster and card equal to Fragmentation(); samples a failing recorder
// refused are counted as recorder errors and recorded with the next ones.
func TestFragmentationRecorded(t *testing.T) {
	m := NewMetrics(prometheus.NewPedanticRegistry())
	rec := newFragRecorder()
	h := newHarness(t, placedTestConfig(), WithMetrics(m), WithRecorder(rec))
	h.submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 3, Card: "H100-80GB"})
	h.submit(JobSpec{Team: "team-b", Queue: "b", GPUs: 3, Card: "H100-80GB"})
	h.pass()
	h.submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 2, GPUsPerNode: 2, Card: "H100-80GB"})
	h.clock.advance(DefaultFragmentationEvery)
	h.pass()
	t1 := t0.Add(DefaultFragmentationEvery)
	got := rec.waitFor(t, t1)
	live := h.svc.Fragmentation()
	var last []FragmentationSample
	for _, s := range got {
		if s.Time.Equal(t1) {
			last = append(last, s)
		}
	}
	if len(last) != len(live) || len(live) != 2 {
		t.Fatalf("samples at %s: %+v, want one per cluster and card of %+v", t1, last, live)
	}
	for i := range live {
		if last[i].Fragmentation != live[i] {
			t.Errorf("sample %+v, want the live figure %+v", last[i], live[i])
		}
		if c := live[i]; c.Card == "H100-80GB" && (c.Free != 2 || c.Stranded != 2 || c.Waiting != 1) {
			t.Errorf("H100 figure %+v, want 2 free, 2 stranded, 1 waiting", c)
		}
	}

	// Passes sooner than FragmentationEvery after the last sample take none.
	h.clock.advance(30 * time.Second)
	h.pass()
	h.clock.advance(30 * time.Second)
	h.pass()
	t2 := t1.Add(time.Minute)
	for _, s := range rec.waitFor(t, t2) {
		if !s.Time.Equal(t0) && !s.Time.Equal(t1) && !s.Time.Equal(t2) {
			t.Errorf("a sample at %s: the passes 30 s after the last sample take none", s.Time)
		}
	}

	// A failing recorder: counted, and the samples stay for the next try.
	rec.setDown(true)
	errsBefore := testutil.ToFloat64(m.recordErrs)
	h.clock.advance(time.Minute)
	h.pass()
	t3, t4 := t2.Add(time.Minute), t2.Add(2*time.Minute)
	if c := rec.callAt(t, t3, func(fragCall) bool { return true }); c.err == nil {
		t.Fatal("the recorder is down, yet the samples were kept")
	}
	rec.setDown(false)
	h.clock.advance(time.Minute)
	h.pass()
	got = rec.waitFor(t, t4)
	if n := countAt(got, t3); n != 2 {
		t.Errorf("%d samples of %s, refused once then recorded with the next, want 2", n, t3)
	}
	if d := testutil.ToFloat64(m.recordErrs) - errsBefore; d < 1 {
		t.Errorf("recorder errors grew by %v, want at least 1", d)
	}
}

func countAt(samples []FragmentationSample, at time.Time) int {
	n := 0
	for _, s := range samples {
		if s.Time.Equal(at) {
			n++
		}
	}
	return n
}

// TestFragmentationNotSampled: nothing is sampled with fragmentation_every 0,
// nor by a scheduler that does not place jobs on nodes (its figure is nil).
func TestFragmentationNotSampled(t *testing.T) {
	off := placedTestConfig()
	off.FragmentationEvery = 0
	for name, cfg := range map[string]Config{"fragmentation_every 0": off, "no nodes": testConfig()} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, cfg)
			h.submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 3, Card: "H100-80GB"})
			h.pass()
			h.svc.auditMu.Lock()
			n, last := len(h.svc.frag.pending), h.svc.frag.last
			h.svc.auditMu.Unlock()
			if n != 0 || !last.IsZero() || len(h.rec.FragmentationSamples()) != 0 {
				t.Fatalf("%d samples pending, last %s: want none taken", n, last)
			}
		})
	}
}

// TestFragmentationEveryValidated: fragmentation_every is 0 or 10s to 10m.
func TestFragmentationEveryValidated(t *testing.T) {
	for _, d := range []time.Duration{5 * time.Second, 11 * time.Minute, -time.Minute} {
		c := DefaultConfig()
		c.FragmentationEvery = d
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), "fragmentation_every: "+d.String()+" must be 0 (never) or 10s to 10m0s") {
			t.Errorf("fragmentation_every %s: %v, want it refused naming the field and the values it takes", d, err)
		}
	}
	for _, d := range []time.Duration{0, 10 * time.Second, time.Minute, 10 * time.Minute} {
		c := DefaultConfig()
		c.FragmentationEvery = d
		if err := c.Validate(); err != nil {
			t.Errorf("fragmentation_every %s: %v", d, err)
		}
	}
}
