package clock

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

var t0 = time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)

// recorder is a fake pass: it records the pass times and the order of barrier
// calls, waits and passes.
type recorder struct {
	mu     sync.Mutex
	at     []time.Time
	events []string
	fail   map[time.Time]error
	// hold, when set, is received from before a pass returns.
	hold chan struct{}
	// took is how long (on the fake clock) a pass takes.
	took time.Duration
}

func (r *recorder) pass(ctx context.Context, at time.Time) error {
	r.mu.Lock()
	r.at = append(r.at, at)
	r.events = append(r.events, "pass "+at.Format("15:04"))
	err := r.fail[at]
	r.mu.Unlock()
	if r.hold != nil {
		select {
		case <-r.hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if r.took > 0 {
		time.Sleep(r.took)
	}
	return err
}

func (r *recorder) barrier(at time.Time) Wait {
	r.mu.Lock()
	r.events = append(r.events, "due "+at.Format("15:04"))
	r.mu.Unlock()
	return func(context.Context) error {
		r.mu.Lock()
		r.events = append(r.events, "wait "+at.Format("15:04"))
		r.mu.Unlock()
		return nil
	}
}

func (r *recorder) times() []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.at)
}

func newRunner(t *testing.T, cfg Config, rec *recorder, opts ...Option) *Runner {
	t.Helper()
	r, err := New(cfg, rec.pass, rec.barrier, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// at returns t0 plus each offset.
func at(offsets ...time.Duration) []time.Time {
	out := make([]time.Time, len(offsets))
	for i, d := range offsets {
		out[i] = t0.Add(d)
	}
	return out
}

// every returns from, from+step, … up to and including to (offsets from t0).
func every(from, to, step time.Duration) []time.Time {
	var out []time.Time
	for d := from; d <= to; d += step {
		out = append(out, t0.Add(d))
	}
	return out
}

// TestDueTimes drives the inline runner over records and checks the passes run:
// start+interval, +2·interval, … before the record after them, and a last one at
// the end; in a gap longer than the limit, only those up to the limit after the
// last record, resuming just before the data does.
func TestDueTimes(t *testing.T) {
	const m = time.Minute
	day := 24 * time.Hour
	tests := []struct {
		name     string
		cfg      Config
		records  []time.Time
		end      time.Time // zero: the last record
		want     []time.Time
		lastWant bool // the end is also a pass time
	}{
		{
			name:    "a pass every interval and one at the end",
			cfg:     Config{Interval: 5 * m},
			records: every(0, 12*m, 30*time.Second),
			want:    at(5*m, 10*m, 12*m),
		},
		{
			name:    "the end on a pass time gets one pass",
			cfg:     Config{Interval: 5 * m},
			records: every(0, 10*m, m),
			want:    at(5*m, 10*m),
		},
		{
			name: "a pass waits for the record after its time",
			cfg:  Config{Interval: 5 * m},
			// The record at 5m is in the window of the pass at 5m: that pass
			// runs when the clock passes 5m, not when it reaches it.
			records: at(0, 5*m),
			want:    at(5 * m),
		},
		{
			name:    "a single record",
			cfg:     Config{Interval: 5 * m},
			records: at(0),
			want:    at(0),
		},
		{
			name:    "no gap limit: every pass of a gap",
			cfg:     Config{Interval: time.Hour},
			records: at(0, 10*time.Hour),
			want:    every(time.Hour, 10*time.Hour, time.Hour),
		},
		{
			// TestAnalyzeTraceGap's trace (cmd/gpupool): two stretches of 30
			// records a minute apart, three days apart. Each stretch's passes,
			// those of the 3 h after the first, and the last at the end: not the
			// 864 passes of the gap.
			name:    "two stretches three days apart",
			cfg:     Config{Interval: 5 * m, GapLimit: 3 * time.Hour},
			records: append(every(0, 29*m, m), every(3*day, 3*day+29*m, m)...),
			want: slices.Concat(
				every(5*m, 25*m, 5*m),              // the first stretch
				every(30*m, 29*m+3*time.Hour, 5*m), // up to 3 h after its last record
				every(3*day, 3*day+25*m, 5*m),      // the second (its start is a pass time)
				at(3*day+29*m),                     // the end
			),
		},
		{
			name: "the data resumes between pass times",
			cfg:  Config{Interval: 5 * m, GapLimit: 3 * time.Hour},
			records: append(every(0, 10*m, m),
				t0.Add(day+2*m), t0.Add(day+4*m), t0.Add(day+6*m)),
			want: slices.Concat(
				every(5*m, 10*m, 5*m),
				every(15*m, 10*m+3*time.Hour, 5*m),
				at(day, day+5*m, day+6*m), // just before the data resumes, then on
			),
		},
		{
			name:    "a gap as long as the limit is not skipped",
			cfg:     Config{Interval: time.Hour, GapLimit: 3 * time.Hour},
			records: at(0, 3*time.Hour+time.Minute),
			want:    at(time.Hour, 2*time.Hour, 3*time.Hour, 3*time.Hour+time.Minute),
		},
		{
			name:    "a configured start",
			cfg:     Config{Interval: 5 * m, Start: t0.Add(-3 * m)},
			records: every(0, 8*m, m),
			want:    at(2*m, 7*m, 8*m),
		},
		{
			name: "finish past the last record",
			cfg:  Config{Interval: 5 * m},
			// The demo's clock runs on after its last Advance to the end.
			records: every(0, 6*m, m),
			end:     t0.Add(17 * m),
			want:    at(5*m, 10*m, 15*m, 17*m),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			r := newRunner(t, tc.cfg, rec)
			for _, ts := range tc.records {
				if err := r.Advance(t.Context(), ts); err != nil {
					t.Fatal(err)
				}
			}
			end := tc.end
			if end.IsZero() {
				end = tc.records[len(tc.records)-1]
			}
			if err := r.Finish(t.Context(), end); err != nil {
				t.Fatal(err)
			}
			if got := rec.times(); !slices.Equal(got, tc.want) {
				t.Errorf("passes at\n%v\nwant\n%v", offsets(got), offsets(tc.want))
			}
			st := r.Stats()
			if st.Passes != len(tc.want) || st.Skipped != 0 || st.Failed != 0 || !st.Last.Equal(end) {
				t.Errorf("stats %+v, want %d passes, the last at %s", st, len(tc.want), end)
			}
		})
	}
}

func offsets(ts []time.Time) []string {
	out := make([]string, len(ts))
	for i, x := range ts {
		out[i] = x.Sub(t0).String()
	}
	return out
}

// TestBarrierOrder: a pass's barrier is asked when the pass falls due, and its
// wait runs before the pass.
func TestBarrierOrder(t *testing.T) {
	rec := &recorder{}
	r := newRunner(t, Config{Interval: 5 * time.Minute}, rec)
	for _, ts := range every(0, 11*time.Minute, time.Minute) {
		if err := r.Advance(t.Context(), ts); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Finish(t.Context(), t0.Add(11*time.Minute)); err != nil {
		t.Fatal(err)
	}
	want := []string{"due 08:05", "wait 08:05", "pass 08:05", "due 08:10", "wait 08:10", "pass 08:10", "due 08:11", "wait 08:11", "pass 08:11"}
	if !slices.Equal(rec.events, want) {
		t.Errorf("events %v, want %v", rec.events, want)
	}
}

// TestFailedPass: a failed pass is logged and counted, and the passes go on.
func TestFailedPass(t *testing.T) {
	var logs bytes.Buffer
	rec := &recorder{fail: map[time.Time]error{t0.Add(10 * time.Minute): errors.New("detector idle: boom")}}
	r := newRunner(t, Config{Interval: 5 * time.Minute}, rec, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	for _, ts := range every(0, 20*time.Minute, time.Minute) {
		if err := r.Advance(t.Context(), ts); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Finish(t.Context(), t0.Add(20*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if st := r.Stats(); st.Passes != 4 || st.Failed != 1 {
		t.Errorf("stats %+v, want 4 passes, 1 failed", st)
	}
	if !strings.Contains(logs.String(), "analyzer pass failed") || !strings.Contains(logs.String(), "boom") {
		t.Errorf("the failure is not logged: %s", logs.String())
	}
}

// TestBarrierError: a wait that fails stops the runner with its error.
func TestBarrierError(t *testing.T) {
	rec := &recorder{}
	flush := errors.New("flush: insert failed")
	r, err := New(Config{Interval: 5 * time.Minute}, rec.pass, func(time.Time) Wait {
		return func(context.Context) error { return flush }
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Advance(t.Context(), t0); err != nil {
		t.Fatal(err)
	}
	if err := r.Advance(t.Context(), t0.Add(6*time.Minute)); !errors.Is(err, flush) {
		t.Errorf("Advance = %v, want the barrier's error", err)
	}
	if st := r.Stats(); st.Passes != 0 {
		t.Errorf("a pass ran without its data: %+v", st)
	}
}

// TestCanceled: a pass cut short by the caller's context stops the runner with
// ctx's error and is not counted as failed.
func TestCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	r, err := New(Config{Interval: 5 * time.Minute}, func(ctx context.Context, _ time.Time) error {
		cancel()
		return ctx.Err()
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Advance(ctx, t0); err != nil {
		t.Fatal(err)
	}
	if err := r.Advance(ctx, t0.Add(6*time.Minute)); !errors.Is(err, context.Canceled) {
		t.Errorf("Advance = %v, want context.Canceled", err)
	}
	if st := r.Stats(); st.Failed != 0 {
		t.Errorf("a canceled pass counted as failed: %+v", st)
	}
}

// TestBackground runs passes in the runner's goroutine while the clock runs on:
// when passes fall behind, the runner skips to the latest due, and Finish runs
// what is queued and a last pass at the end.
func TestBackground(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{hold: make(chan struct{}), took: time.Second}
		r := newRunner(t, Config{Interval: 5 * time.Minute, Start: t0}, rec)
		r.Start(t.Context())
		advance := func(d time.Duration) {
			if err := r.Advance(t.Context(), t0.Add(d)); err != nil {
				t.Fatal(err)
			}
		}
		advance(6 * time.Minute) // 5m falls due; its pass starts and is held
		synctest.Wait()
		advance(16 * time.Minute) // 10m and 15m queue behind it
		advance(21 * time.Minute) // and 20m
		synctest.Wait()
		if got := rec.times(); !slices.Equal(got, at(5*time.Minute)) {
			t.Fatalf("passes while the first is held: %v", offsets(got))
		}
		rec.hold <- struct{}{} // 5m ends a second later; the runner skips 10m and 15m
		time.Sleep(time.Second)
		synctest.Wait()
		if got := rec.times(); !slices.Equal(got, at(5*time.Minute, 20*time.Minute)) {
			t.Fatalf("passes after falling behind: %v, want 5m and 20m", offsets(got))
		}
		if st := r.Stats(); st.Skipped != 2 || st.Passes != 1 {
			t.Errorf("stats while the 20m pass runs: %+v, want 1 pass done, 2 skipped", st)
		}
		advance(24 * time.Minute)
		close(rec.hold) // from now on passes are not held
		if err := r.Finish(t.Context(), t0.Add(24*time.Minute)); err != nil {
			t.Fatal(err)
		}
		want := at(5*time.Minute, 20*time.Minute, 24*time.Minute)
		if got := rec.times(); !slices.Equal(got, want) {
			t.Errorf("passes %v, want %v", offsets(got), offsets(want))
		}
		st := r.Stats()
		if st.Passes != 3 || st.Skipped != 2 || st.Failed != 0 || !st.Last.Equal(t0.Add(24*time.Minute)) || st.Took != 3*time.Second {
			t.Errorf("stats %+v, want 3 passes of 1s, 2 skipped, the last at 24m", st)
		}
		r.Stop() // after Finish: nothing to do
	})
}

// TestBackgroundBarrier: the barrier notes what to wait for when the pass falls
// due, in the caller's goroutine; the wait runs in the runner's before the pass.
func TestBackgroundBarrier(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var published, stored int
		var mu sync.Mutex
		var passAt []int
		pass := func(_ context.Context, at time.Time) error {
			mu.Lock()
			passAt = append(passAt, stored)
			mu.Unlock()
			return nil
		}
		barrier := func(time.Time) Wait {
			want := published // the caller's goroutine: what was published by then
			return func(ctx context.Context) error {
				for {
					mu.Lock()
					ok := stored >= want
					mu.Unlock()
					if ok {
						return nil
					}
					select {
					case <-ctx.Done():
						return ctx.Err()
					case <-time.After(20 * time.Millisecond):
					}
				}
			}
		}
		r, err := New(Config{Interval: 5 * time.Minute, Start: t0}, pass, barrier)
		if err != nil {
			t.Fatal(err)
		}
		r.Start(t.Context())
		published = 100
		if err := r.Advance(t.Context(), t0.Add(6*time.Minute)); err != nil {
			t.Fatal(err)
		}
		published = 200 // the fleet goes on; the pass at 5m needs only 100
		time.Sleep(time.Second)
		mu.Lock()
		if len(passAt) != 0 {
			t.Errorf("a pass ran before its data was stored")
		}
		stored = 150
		mu.Unlock()
		time.Sleep(time.Second)
		synctest.Wait()
		mu.Lock()
		if len(passAt) != 1 || passAt[0] != 150 {
			t.Errorf("passes ran with %v rows stored, want one with 150", passAt)
		}
		stored = 200 // ingest catches up; the last pass waits for all of it
		mu.Unlock()
		if err := r.Finish(t.Context(), t0.Add(6*time.Minute)); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if !slices.Equal(passAt, []int{150, 200}) {
			t.Errorf("passes ran with %v rows stored, want 150 then 200", passAt)
		}
	})
}

// TestBackgroundStop: Stop ends the loop without running what is queued, and a
// barrier error ends it for Finish to return.
func TestBackgroundStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{hold: make(chan struct{})}
		r := newRunner(t, Config{Interval: 5 * time.Minute, Start: t0}, rec)
		r.Start(t.Context())
		for _, d := range []time.Duration{6, 11, 16} {
			if err := r.Advance(t.Context(), t0.Add(d*time.Minute)); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		r.Stop()
		if got := rec.times(); len(got) != 1 {
			t.Errorf("passes after Stop: %v", offsets(got))
		}
	})
	synctest.Test(t, func(t *testing.T) {
		lost := errors.New("ingest stopped")
		r, err := New(Config{Interval: 5 * time.Minute, Start: t0}, (&recorder{}).pass, func(time.Time) Wait {
			return func(context.Context) error { return lost }
		})
		if err != nil {
			t.Fatal(err)
		}
		r.Start(t.Context())
		if err := r.Advance(t.Context(), t0.Add(6*time.Minute)); err != nil {
			t.Fatal(err)
		}
		if err := r.Finish(t.Context(), t0.Add(6*time.Minute)); !errors.Is(err, lost) {
			t.Errorf("Finish = %v, want the barrier's error", err)
		}
	})
}

// TestFinishWithoutData: a clock that never advanced gets one pass at the end.
func TestFinishWithoutData(t *testing.T) {
	rec := &recorder{}
	r := newRunner(t, Config{Interval: 5 * time.Minute}, rec)
	if err := r.Finish(t.Context(), t0); err != nil {
		t.Fatal(err)
	}
	if got := rec.times(); !slices.Equal(got, at(0)) {
		t.Errorf("passes %v, want one at the end", offsets(got))
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"default", DefaultConfig(), ""},
		{"no interval", Config{}, "interval"},
		{"negative gap", Config{Interval: time.Minute, GapLimit: -time.Second}, "gap_limit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("Validate() = %v, want an error naming %q", err, tc.want)
			}
		})
	}
	if _, err := New(DefaultConfig(), nil, nil); err == nil {
		t.Error("New without a pass succeeded")
	}
}
