package reports

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// fakeClock fires After channels when the test advances it.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []waiter
	waiting chan struct{}
}

type waiter struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock(t time.Time) *fakeClock {
	return &fakeClock{now: t, waiting: make(chan struct{}, 100)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	c.waiters = append(c.waiters, waiter{c.now.Add(d), ch})
	c.waiting <- struct{}{}
	return ch
}

// advanceTo moves time forward, firing the waiters that are due.
func (c *fakeClock) advanceTo(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.at.After(t) {
			w.ch <- t
		} else {
			kept = append(kept, w)
		}
	}
	c.waiters = kept
}

type runRecord struct {
	name, period string
	at           time.Time
}

func startScheduler(t *testing.T, clock *fakeClock, state string, scheds []Schedule) (runs chan runRecord, stop func()) {
	t.Helper()
	runs = make(chan runRecord, 10)
	s, err := NewScheduler(scheds, state, func(_ context.Context, sc Schedule, p Period, at time.Time) error {
		runs <- runRecord{sc.Name, p.Label, at}
		return nil
	}, WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = s.Run(ctx); close(done) }()
	return runs, func() { cancel(); <-done }
}

func TestScheduleRunsAndCatchesUpOnce(t *testing.T) {
	berlin, _ := time.LoadLocation("Europe/Berlin")
	monthly := Schedule{Name: "chargeback", Cron: "0 8 1 * *", TimeZone: "Europe/Berlin", Period: PreviousMonth, Formats: []string{"html"}}
	state := filepath.Join(t.TempDir(), "state.json")
	clock := newFakeClock(time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC))

	runs, stop := startScheduler(t, clock, state, []Schedule{monthly})
	<-clock.waiting
	select {
	case r := <-runs:
		t.Fatalf("first start ran %v: nothing was missed", r)
	default:
	}
	clock.advanceTo(time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC)) // 08:00 in Berlin (CET)
	r := <-runs
	if r.period != "2026-11" || !r.at.Equal(time.Date(2026, 12, 1, 8, 0, 0, 0, berlin)) {
		t.Fatalf("run %+v, want period 2026-11 at 08:00 Berlin", r)
	}
	<-clock.waiting
	stop()

	// Down for two due times: one catch-up run, for the latest.
	clock.advanceTo(time.Date(2027, 2, 10, 0, 0, 0, 0, time.UTC))
	runs, stop = startScheduler(t, clock, state, []Schedule{monthly})
	defer stop()
	r = <-runs
	if r.period != "2027-01" {
		t.Fatalf("catch-up run for %s, want the latest missed (2027-01)", r.period)
	}
	<-clock.waiting
	select {
	case r := <-runs:
		t.Fatalf("a second catch-up run: %+v", r)
	default:
	}
}

func TestScheduleValidate(t *testing.T) {
	for name, s := range map[string]Schedule{
		"bad cron":   {Name: "x", Cron: "every day", Period: PreviousDay, Formats: []string{"csv"}},
		"bad zone":   {Name: "x", Cron: "0 8 * * *", TimeZone: "Mars/Olympus", Period: PreviousDay, Formats: []string{"csv"}},
		"bad period": {Name: "x", Cron: "0 8 * * *", Period: "yesterday-ish", Formats: []string{"csv"}},
		"bad format": {Name: "x", Cron: "0 8 * * *", Period: PreviousDay, Formats: []string{"pdf"}},
	} {
		if err := s.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestPeriods(t *testing.T) {
	tests := []struct {
		in, label string
		from, to  time.Time
	}{
		{"2026-11", "2026-11", time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)},
		{"2026-11-30", "2026-11-30", time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)},
		{"2026-W49", "2026-W49", time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)},
	}
	for _, tt := range tests {
		p, err := ParsePeriod(tt.in, time.UTC)
		if err != nil || p.Label != tt.label || !p.From.Equal(tt.from) || !p.To.Equal(tt.to) {
			t.Errorf("ParsePeriod(%s) = %+v, %v", tt.in, p, err)
		}
	}
	if _, err := ParsePeriod("November", time.UTC); err == nil {
		t.Error("ParsePeriod accepted November")
	}
	p, _ := ParsePeriod("2026-01", time.UTC)
	if prev := p.Previous(); prev.Label != "2025-12" {
		t.Errorf("Previous of 2026-01 = %s", prev.Label)
	}
	wk, _ := PeriodBefore(PreviousWeek, time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC))
	if wk.Label != "2026-W48" || wk.From.Weekday() != time.Monday {
		t.Errorf("PeriodBefore week = %+v", wk)
	}
}

func TestParseTime(t *testing.T) {
	for _, tc := range []struct {
		in, want string // want "" : an error
	}{
		{"2026-11-30", "2026-11-30T00:00:00Z"},
		{"2026-11-30 12:30:00", "2026-11-30T12:30:00Z"},
		{"2026-11-30T12:30:00+01:00", "2026-11-30T11:30:00Z"},
		{"30/11/2026", ""},
	} {
		got, err := ParseTime(tc.in)
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("ParseTime(%q) = %s, want an error", tc.in, got)
		case tc.want != "" && (err != nil || got.Format(time.RFC3339) != tc.want):
			t.Errorf("ParseTime(%q) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}
