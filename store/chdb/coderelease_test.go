package chdb

import (
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestCodeReleaseSchedule checks when a writing store releases the engine's code
// again: after its 2nd, 8th and 32nd insert, then once per interval, never two
// at once, always page by page.
func TestCodeReleaseSchedule(t *testing.T) {
	clock := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	var at []uint64 // inserts counted when each release ran
	r := newCodeReleaser("libchdb.so", 10*time.Minute, slog.New(slog.DiscardHandler))
	r.now = func() time.Time { return clock }
	r.release = func(lib string, pageByPage bool) (uint64, uint64, error) {
		if lib != "libchdb.so" || !pageByPage {
			t.Errorf("release(%q, %v): want the store's library, page by page", lib, pageByPage)
		}
		mu.Lock()
		at = append(at, r.inserts.Load())
		mu.Unlock()
		return 200 << 20, 40 << 20, nil
	}
	insert := func(n int) {
		for range n {
			r.inserted()
			r.wait()
		}
	}
	insert(40)
	if want := []uint64{2, 8, 32}; !slices.Equal(at, want) {
		t.Fatalf("warm-up releases after inserts %v, want %v", at, want)
	}
	clock = clock.Add(9 * time.Minute) // 9 minutes after the 32nd insert's release: not yet
	insert(5)
	clock = clock.Add(time.Minute)
	insert(1) // the 46th insert, 10 minutes after the last release
	clock = clock.Add(5 * time.Minute)
	insert(3)
	if want := []uint64{2, 8, 32, 46}; !slices.Equal(at, want) {
		t.Fatalf("releases after inserts %v, want %v", at, want)
	}

	// An insert while a release runs does not start another.
	block, started := make(chan struct{}), make(chan struct{})
	r.release = func(string, bool) (uint64, uint64, error) {
		close(started)
		<-block
		return 0, 0, errors.New("no such mapping")
	}
	clock = clock.Add(10 * time.Minute)
	r.inserted()
	<-started
	runs := r.runs.Load()
	clock = clock.Add(time.Hour)
	r.inserted() // due, but one is running: skipped
	close(block)
	r.wait()
	if got := r.runs.Load(); got != runs+1 {
		t.Fatalf("%d releases ran while one was running, want none", got-runs-1)
	}
}
