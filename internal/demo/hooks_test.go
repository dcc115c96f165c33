package demo

import (
	"bytes"
	"context"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gpupool/gpupool/reports"
)

// TestHooksSeeEveryComponent: a run with hooks labels the work of every
// component, calls Started, Simulated and Done in that order, and from Started
// on reports the counts, the simulated time and the console; at Simulated
// every published row is stored.
func TestHooksSeeEveryComponent(t *testing.T) {
	c := smallConfig(t, 1)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var (
		mu       sync.Mutex
		labelled []string
		events   []string
		d        *Demo
	)
	note := func(e string) { mu.Lock(); events = append(events, e); mu.Unlock() }
	h := Hooks{
		Label: func(ctx context.Context, comp string, f func(context.Context)) {
			mu.Lock()
			labelled = append(labelled, comp)
			mu.Unlock()
			f(ctx)
		},
		Started: func(dm *Demo) {
			note("started")
			if url, _ := dm.Console(); url == "" {
				t.Error("Started: no console URL")
			}
			if dm.SimNow().IsZero() {
				t.Error("Started: no simulated time")
			}
		},
		Simulated: func() {
			note("simulated")
			if pub, st := d.Counts(); pub == 0 || st < pub {
				t.Errorf("Simulated: published %d, stored %d; want all stored", pub, st)
			}
		},
		Done: func() { note("done"); cancel() },
	}
	var out bytes.Buffer
	var err error
	d, err = New(c, WithBaseline(false), WithConsole("127.0.0.1:0"), WithHooks(h), WithOutput(&out),
		WithProgress(reports.NewProgressLines(io.Discard, time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Run(ctx); err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	if !slices.Equal(events, []string{"started", "simulated", "done"}) {
		t.Errorf("hooks called %v, want started, simulated, done", events)
	}
	for _, comp := range []string{CompNATS, CompStore, CompIngest, CompCollectors, CompAnalyzer, CompScheduler, CompConsole} {
		if !slices.Contains(labelled, comp) {
			t.Errorf("no work labelled %q (labelled: %v)", comp, slices.Compact(slices.Sorted(slices.Values(labelled))))
		}
	}
}
