package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpupool/gpupool/schemas/trace"
)

var t0 = time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)

func ts(ms int) string { return t0.Add(time.Duration(ms) * time.Millisecond).Format(time.RFC3339Nano) }

func gpu(node string, ms, idx int) string {
	return fmt.Sprintf(`{"type":"gpu","ts":%q,"cluster":"c1","node":%q,"gpu_uuid":"GPU-%s-%d","gpu_index":%d,"model":"NVIDIA H100 80GB HBM3","fb_total_mib":81559,"fb_used_mib":100,"sm_active":0.5}`, ts(ms), node, node, idx, idx)
}

func proc(node string, ms, pid int) string {
	return fmt.Sprintf(`{"type":"process","ts":%q,"cluster":"c1","node":%q,"gpu_uuid":"GPU-%s-0","pid":%d,"job":"j1","fb_used_mib":90}`, ts(ms), node, node, pid)
}

func job(ms int, event string) string {
	return fmt.Sprintf(`{"type":"job","ts":%q,"job":"j1","event":%q,"cluster":"c1"}`, ts(ms), event)
}

func newPlayer(t *testing.T, lines []string, opts trace.ReaderOptions, cfg Config, o ...Option) *Player {
	t.Helper()
	r := trace.NewReader(strings.NewReader(strings.Join(lines, "\n")+"\n"), opts)
	p, err := New(r, cfg, o...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// playAll returns every Tick, and the error that ended play (nil for io.EOF).
func playAll(t *testing.T, p *Player) ([]Tick, error) {
	t.Helper()
	var ticks []Tick
	for {
		tk, err := p.Next(t.Context())
		if errors.Is(err, io.EOF) {
			return ticks, nil
		}
		if err != nil {
			return ticks, err
		}
		ticks = append(ticks, tk)
	}
}

// describe renders ticks compactly: "+0s c1/a:2g1p c1/b:1g0p jobs:1".
func describe(ticks []Tick) string {
	var out []string
	for _, tk := range ticks {
		s := fmt.Sprintf("+%s", tk.At.Sub(t0))
		for _, b := range tk.Batches {
			s += fmt.Sprintf(" %s/%s:%dg%dp", b.Cluster, b.Node, len(b.GPUs), len(b.Processes))
		}
		if len(tk.Jobs) > 0 {
			s += fmt.Sprintf(" jobs:%d", len(tk.Jobs))
		}
		out = append(out, s)
	}
	return strings.Join(out, "; ")
}

func TestGroupsInterleavedNodes(t *testing.T) {
	lines := []string{
		job(0, "start"),
		gpu("a", 0, 0), gpu("a", 0, 1), proc("a", 0, 10),
		gpu("a", 1000, 0), gpu("a", 1000, 1), // a runs ahead of b
		gpu("b", 0, 0), proc("b", 0, 20), // b's first tick, after a's second
		gpu("a", 2000, 0),
		gpu("b", 1000, 0),
		job(1500, "end"), // between ticks: a tick of its own
		gpu("b", 2000, 0), gpu("a", 2000, 1),
	}
	p := newPlayer(t, lines, trace.ReaderOptions{Strict: true}, DefaultConfig())
	ticks, err := playAll(t, p)
	if err != nil {
		t.Fatal(err)
	}
	const want = "+0s c1/a:2g1p c1/b:1g1p jobs:1; +1s c1/a:2g0p c1/b:1g0p; +1.5s jobs:1; +2s c1/a:2g0p c1/b:1g0p"
	if got := describe(ticks); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	b := ticks[0].Batches[0]
	if b.GPUs[0].GPUUUID != "GPU-a-0" || b.GPUs[1].GPUUUID != "GPU-a-1" || b.Processes[0].PID != 10 || b.GPUs[0].Card != "H100-80GB" {
		t.Errorf("rows out of trace order or wrong: %+v", b)
	}
	if s := p.Stats(); s.Ticks != 4 || s.GPURows != 9 || s.ProcessRows != 2 || s.JobEvents != 2 || s.LateRecords != 0 {
		t.Errorf("stats %+v", s)
	}
}

func TestLateRecords(t *testing.T) {
	lines := []string{gpu("a", 0, 0), gpu("a", 1000, 0), gpu("a", 2000, 0), gpu("b", 0, 0), gpu("a", 3000, 0)}
	p := newPlayer(t, lines, trace.ReaderOptions{}, Config{Window: time.Second})
	ticks, err := playAll(t, p)
	if err != nil {
		t.Fatal(err)
	}
	// b's row at +0s arrives 2 s late, after +0s was played: it plays at once, at
	// the time of the last tick.
	const want = "+0s c1/a:1g0p; +0s c1/b:1g0p; +1s c1/a:1g0p; +2s c1/a:1g0p; +3s c1/a:1g0p"
	if got := describe(ticks); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if b := ticks[1].Batches[0]; b.GPUs[0].TimeMs != t0.UnixMilli() {
		t.Error("a late row keeps its own time")
	}
	if s := p.Stats(); s.LateRecords != 1 {
		t.Errorf("LateRecords = %d, want 1", s.LateRecords)
	}
}

// fakeClock advances only when the Player sleeps (or the test says so).
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	return nil
}

func (c *fakeClock) advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

func TestRealTimeSpacing(t *testing.T) {
	// Ticks at +0, +1, +2.5 and +10 s of trace time.
	lines := []string{gpu("a", 0, 0), gpu("a", 1000, 0), job(2500, "end"), gpu("a", 10000, 0)}
	for _, tc := range []struct {
		speed float64
		want  []time.Duration // wall time of each tick after the first
	}{
		{1, []time.Duration{0, time.Second, 2500 * time.Millisecond, 10 * time.Second}},
		{10, []time.Duration{0, 100 * time.Millisecond, 250 * time.Millisecond, time.Second}},
		{0, []time.Duration{0, 0, 0, 0}},
	} {
		t.Run(fmt.Sprint("speed ", tc.speed), func(t *testing.T) {
			clock := &fakeClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
			start := clock.Now()
			p := newPlayer(t, lines, trace.ReaderOptions{Strict: true}, Config{Speed: tc.speed, Window: time.Second}, WithClock(clock))
			var got []time.Duration
			for {
				_, err := p.Next(t.Context())
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, clock.Now().Sub(start))
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("ticks played at %v, want %v", got, tc.want)
			}
			if tc.speed == 0 && len(clock.sleeps) != 0 {
				t.Errorf("as fast as possible slept %v", clock.sleeps)
			}
		})
	}
}

func TestRealTimeSlowCaller(t *testing.T) {
	lines := []string{gpu("a", 0, 0), gpu("a", 1000, 0), gpu("a", 2000, 0), gpu("a", 3000, 0)}
	clock := &fakeClock{now: t0}
	p := newPlayer(t, lines, trace.ReaderOptions{}, Config{Speed: 1}, WithClock(clock))
	for i := range 4 {
		if _, err := p.Next(t.Context()); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			clock.advance(2500 * time.Millisecond) // the caller takes 2.5 s over the first tick
		}
	}
	// +1 s and +2 s are overdue and play at once; +3 s waits the remaining 0.5 s.
	if fmt.Sprint(clock.sleeps) != "[500ms]" {
		t.Errorf("slept %v, want [500ms]", clock.sleeps)
	}
}

func TestContextEndsWait(t *testing.T) {
	lines := []string{gpu("a", 0, 0), gpu("a", 60000, 0)}
	clock := &fakeClock{now: t0}
	p := newPlayer(t, lines, trace.ReaderOptions{}, Config{Speed: 1}, WithClock(clock))
	if _, err := p.Next(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := p.Next(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	tk, err := p.Next(t.Context())
	if err != nil || !tk.At.Equal(t0.Add(time.Minute)) {
		t.Fatalf("after a cancelled wait, got %v %v; want the +1m tick", tk.At, err)
	}
}

// TestSystemClock plays at Speed 2 on the real clock, inside a synctest bubble
// where time is virtual.
func TestSystemClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lines := []string{gpu("a", 0, 0), gpu("a", 1000, 0), gpu("a", 4000, 0)}
		p := newPlayer(t, lines, trace.ReaderOptions{}, Config{Speed: 2, Window: time.Second})
		start := time.Now()
		var got []time.Duration
		for {
			_, err := p.Next(t.Context())
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, time.Since(start))
		}
		if fmt.Sprint(got) != "[0s 500ms 2s]" {
			t.Errorf("ticks at %v, want [0s 500ms 2s]", got)
		}
	})
}

const badLine = `{"type":"gpu","ts":"2026-12-01T08:00:01Z","node":"a"}`

func TestBadLinesLenient(t *testing.T) {
	lines := []string{gpu("a", 0, 0), "garbage", gpu("a", 1000, 0), badLine, gpu("a", 2000, 0)}
	p := newPlayer(t, lines, trace.ReaderOptions{}, DefaultConfig())
	ticks, err := playAll(t, p)
	if err != nil || len(ticks) != 3 {
		t.Fatalf("got %d ticks, %v; want 3 and the bad lines skipped", len(ticks), err)
	}
	errs := p.Errors()
	if s := p.Stats(); s.SkippedLines != 2 || len(errs) != 2 || errs[0].Line != 2 || errs[1].Line != 4 ||
		!strings.Contains(errs[1].Reason, `"gpu_uuid"`) {
		t.Errorf("stats %+v, errors %v", s, errs)
	}
}

func TestBadLinesStrict(t *testing.T) {
	lines := []string{gpu("a", 0, 0), gpu("b", 0, 0), gpu("a", 1000, 0), badLine, gpu("a", 2000, 0)}
	p := newPlayer(t, lines, trace.ReaderOptions{Strict: true}, DefaultConfig())
	ticks, err := playAll(t, p)
	var le *trace.LineError
	if !errors.As(err, &le) || le.Line != 4 {
		t.Fatalf("got %v, want the LineError of line 4", err)
	}
	// What was read before the bad line is played first.
	if got := describe(ticks); got != "+0s c1/a:1g0p c1/b:1g0p; +1s c1/a:1g0p" {
		t.Errorf("ticks before the stop: %s", got)
	}
	if _, err2 := p.Next(t.Context()); !errors.As(err2, &le) {
		t.Errorf("Next after the stop = %v, want the same error", err2)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{{Speed: -1}, {Speed: 1, Window: -time.Second}, {Window: 2 * MaxWindow}} {
		if _, err := New(trace.NewReader(strings.NewReader(""), trace.ReaderOptions{}), c); err == nil {
			t.Errorf("New accepted %+v", c)
		}
	}
	if _, err := New(nil, DefaultConfig()); err == nil {
		t.Error("New accepted a nil reader")
	}
}

// TestPlaySample plays the trace package's sample: two nodes (one with MIG
// instances) interleaved, with job events before, between and after the samples.
func TestPlaySample(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "..", "schemas", "trace", "testdata", "sample.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := New(trace.NewReader(f, trace.ReaderOptions{Strict: true}), DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	ticks, err := playAll(t, p)
	if err != nil {
		t.Fatal(err)
	}
	const want = "+-2s jobs:1; +-750ms jobs:1; +-500ms jobs:1; +0s us-east/gpu-a-001:2g2p us-east/gpu-b-001:2g1p; " +
		"+1s us-east/gpu-a-001:2g2p us-east/gpu-b-001:2g2p; +1.75s jobs:1; +2s jobs:1"
	if got := describe(ticks); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// TestDuplicateRecords: a trace with every line doubled plays the rows once and
// counts the doubles (they used to be stored twice and billed twice).
func TestDuplicateRecords(t *testing.T) {
	var lines []string
	for _, l := range []string{job(0, "start"), gpu("a", 0, 0), gpu("a", 0, 1), proc("a", 0, 10), gpu("a", 1000, 0), proc("a", 1000, 10), job(2000, "end")} {
		lines = append(lines, l, l)
	}
	p := newPlayer(t, lines, trace.ReaderOptions{Strict: true}, DefaultConfig())
	ticks, err := playAll(t, p)
	if err != nil {
		t.Fatal(err)
	}
	const want = "+0s c1/a:2g1p jobs:1; +1s c1/a:1g1p; +2s jobs:1"
	if got := describe(ticks); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if s := p.Stats(); s.DuplicateRecords != 7 || s.GPURows != 3 || s.ProcessRows != 2 || s.JobEvents != 2 {
		t.Errorf("stats %+v, want 7 duplicates and each row once", s)
	}
}
