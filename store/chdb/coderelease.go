package chdb

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// warmupInserts: a writing store releases the engine's code pages after its
// 2nd, 8th and 32nd insert. Each table's first inserts and first merges run code
// (building the insert's pipeline and its materialized views, starting merges)
// that steady writing does not run again; by the 32nd insert ingest has written
// 16 batches into every table, and merged them. A release after every power of
// two (seven) held about as little and drained slower, one after the 4th, 16th
// and 64th held more until the 16th (docs/measurements.md).
const warmupInserts = 32

// codeReleaser releases the engine's code pages again while a store writes
// (Config.ReleaseCodeEvery): during the warm-up above, then at most once per
// interval, each time on an insert's completion, in the background.
type codeReleaser struct {
	lib   string
	every time.Duration
	log   *slog.Logger
	// release is releaseCode; tests count the calls.
	release func(lib string, pageByPage bool) (before, after uint64, err error)
	now     func() time.Time

	inserts atomic.Uint64
	// mu is held while a release runs; an insert that finds it held skips.
	mu   sync.Mutex
	last time.Time
	runs atomic.Uint64
	wg   sync.WaitGroup
}

func newCodeReleaser(lib string, every time.Duration, log *slog.Logger) *codeReleaser {
	return &codeReleaser{lib: lib, every: every, log: log, release: releaseCode, now: time.Now}
}

// due reports whether the n-th insert should release the code, given the last
// release at last.
func (r *codeReleaser) due(n uint64, now time.Time) bool {
	if n <= warmupInserts {
		return n == 2 || n == 8 || n == 32
	}
	return now.Sub(r.last) >= r.every
}

// inserted records a completed insert and starts a release when one is due and
// none is running.
func (r *codeReleaser) inserted() {
	n := r.inserts.Add(1)
	if !r.mu.TryLock() {
		return
	}
	now := r.now()
	if !r.due(n, now) {
		r.mu.Unlock()
		return
	}
	r.last = now
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer r.mu.Unlock()
		before, after, err := r.release(r.lib, true)
		r.runs.Add(1)
		if err != nil {
			r.log.Warn("embedded store: could not release the engine's code pages", "err", err)
			return
		}
		r.log.Debug("embedded store: released the engine's code pages", "after_inserts", n, "file_rss_mib_before", before>>20, "file_rss_mib_after", after>>20)
	}()
}

// wait waits for a running release (tests).
func (r *codeReleaser) wait() { r.wg.Wait() }
