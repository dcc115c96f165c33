package clock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Pass runs one analyzer pass at at, a time on the data's clock. An error says
// the pass failed, perhaps in part: the Runner logs it, counts it and goes on.
type Pass func(ctx context.Context, at time.Time) error

// Wait blocks until the data a pass reads is in the store. An error stops the
// Runner: a pass over data that did not arrive would report what is not so.
type Wait func(ctx context.Context) error

// Barrier returns the Wait for a pass at at. It is called when the pass falls due,
// in the goroutine that calls Advance, so that it can note what the pass must wait
// for (what had been published by then); the Wait runs just before the pass, in
// the goroutine that runs it.
type Barrier func(at time.Time) Wait

// Stats says how the passes went.
type Stats struct {
	// Passes is the number of passes run, failed ones included.
	Passes int
	// Skipped is the number of passes due that were not run because a later one
	// was due by the time the runner got to them (background mode only).
	Skipped int
	// Failed is the number of passes that returned an error.
	Failed int
	// Last is the data-clock time of the last pass run; zero before the first.
	Last time.Time
	// Took is the wall time the passes took, in all.
	Took time.Duration
}

// Runner runs passes on the data's clock: inline in Advance and Finish, or after
// Start in its own goroutine. Advance and Finish are called from one goroutine
// (the one that owns the data's clock); Stats may be called from any.
type Runner struct {
	cfg     Config
	pass    Pass
	barrier Barrier
	log     *slog.Logger

	// The data's clock, owned by the goroutine calling Advance and Finish.
	begun      bool
	next, last time.Time

	// Background mode (Start).
	background bool
	wake       chan struct{}
	done       chan struct{}
	cancel     context.CancelFunc

	mu     sync.Mutex
	stats  Stats
	queue  []due
	closed bool  // Finish closed the queue
	ended  bool  // the background loop has returned
	err    error // the error that ended the background loop
}

// due is a pass that fell due in background mode.
type due struct {
	at   time.Time
	wait Wait
}

// Option changes how New builds a Runner.
type Option func(*Runner)

// WithLogger sets the logger failed passes are reported to (default: discard).
func WithLogger(l *slog.Logger) Option { return func(r *Runner) { r.log = l } }

// New returns a Runner that runs pass on the clock cfg describes, each pass after
// the Wait barrier returns for it (nil: the data is always in).
func New(cfg Config, pass Pass, barrier Barrier, opts ...Option) (*Runner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("clock: invalid config: %w", err)
	}
	if pass == nil {
		return nil, errors.New("clock: no pass to run")
	}
	r := &Runner{cfg: cfg, pass: pass, barrier: barrier}
	for _, o := range opts {
		o(r)
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	return r, nil
}

// Start makes the Runner run its passes in a goroutine of its own until Finish or
// Stop, or until ctx ends: Advance then only queues the passes due, and when
// several are queued by the time the last pass ends, only the latest runs (a pass
// judges the windows ending at its time, so a skipped pass loses only conditions
// that came and went between two passes). Call Start at most once, before the
// first Advance.
func (r *Runner) Start(ctx context.Context) {
	ctx, r.cancel = context.WithCancel(ctx)
	r.background = true
	r.wake = make(chan struct{}, 1)
	r.done = make(chan struct{})
	go r.loop(ctx)
}

// Advance tells the Runner that the data's clock has reached now: everything
// before now is in the store or on its way (the next record is at now or later).
// The passes due before now run (inline) or are queued (background). Inline, it
// returns the error of a barrier, or ctx's when a pass was cut short; in
// background mode it returns nil.
func (r *Runner) Advance(ctx context.Context, now time.Time) error {
	r.begin(now)
	for now.After(r.next) {
		if r.cfg.GapLimit > 0 && r.next.After(r.last.Add(r.cfg.GapLimit)) {
			// Nothing was recorded for a while (a trace of several stretches): the
			// passes after the last record have seen it out; go on at the pass due
			// just before the data resumes.
			r.next = r.next.Add(now.Sub(r.next) / r.cfg.Interval * r.cfg.Interval)
			if !now.After(r.next) {
				break
			}
		}
		if err := r.fallDue(ctx, r.next); err != nil {
			return err
		}
		r.next = r.next.Add(r.cfg.Interval)
	}
	if now.After(r.last) {
		r.last = now
	}
	return nil
}

// Finish runs the passes left up to end, the data's last time, and a last one at
// end unless the last pass was at end. In background mode it first waits for the
// passes queued, then runs those in the calling goroutine. It returns a barrier's
// error, or ctx's when it ended first.
func (r *Runner) Finish(ctx context.Context, end time.Time) error {
	if err := r.drain(ctx); err != nil {
		return err
	}
	r.begin(end)
	for ; !r.next.After(end); r.next = r.next.Add(r.cfg.Interval) {
		if err := r.run(ctx, r.next, r.waitFor(r.next)); err != nil {
			return err
		}
	}
	if r.Stats().Last.Before(end) {
		return r.run(ctx, end, r.waitFor(end))
	}
	return nil
}

// Stop ends the background loop without running what is queued (after an error:
// Finish was not reached) and waits for it. It does nothing in inline mode.
func (r *Runner) Stop() {
	if r.background {
		r.cancel()
		<-r.done
	}
}

// Stats returns how the passes went so far.
func (r *Runner) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

// begin starts the data's clock at Config.Start, or at now when that is zero.
func (r *Runner) begin(now time.Time) {
	if r.begun {
		return
	}
	r.begun = true
	start := r.cfg.Start
	if start.IsZero() {
		start = now
	}
	r.next, r.last = start.Add(r.cfg.Interval), start
}

func (r *Runner) waitFor(at time.Time) Wait {
	if r.barrier == nil {
		return nil
	}
	return r.barrier(at)
}

// fallDue runs the pass at at (inline) or queues it (background).
func (r *Runner) fallDue(ctx context.Context, at time.Time) error {
	wait := r.waitFor(at)
	if !r.background {
		return r.run(ctx, at, wait)
	}
	r.mu.Lock()
	if !r.ended {
		r.queue = append(r.queue, due{at: at, wait: wait})
	}
	r.mu.Unlock()
	r.signal()
	return nil
}

func (r *Runner) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// run waits for the pass's data and runs it.
func (r *Runner) run(ctx context.Context, at time.Time, wait Wait) error {
	if wait != nil {
		if err := wait(ctx); err != nil {
			return fmt.Errorf("clock: wait for the data of the pass at %s: %w", at.Format(time.RFC3339), err)
		}
	}
	start := time.Now()
	err := r.pass(ctx, at)
	took := time.Since(start)
	cut := ctx.Err() != nil
	r.mu.Lock()
	r.stats.Passes++
	r.stats.Last = at
	r.stats.Took += took
	if err != nil && !cut {
		r.stats.Failed++
	}
	r.mu.Unlock()
	if cut {
		return ctx.Err()
	}
	if err != nil {
		// A pass that failed in part (one detector) still wrote the rest, and the
		// next one may succeed: say so and go on.
		r.log.Warn("analyzer pass failed", "at", at, "err", err)
	}
	return nil
}

// loop runs the queued passes one after another, the latest of those queued each
// time, until the queue is closed and empty or ctx ends.
func (r *Runner) loop(ctx context.Context) {
	defer close(r.done)
	for {
		d, ok := r.take(ctx)
		if !ok {
			return
		}
		if err := r.run(ctx, d.at, d.wait); err != nil {
			r.end(ctx, err)
			return
		}
	}
}

// take returns the latest pass queued, counting the others as skipped; false when
// the queue is closed and empty or ctx ended.
func (r *Runner) take(ctx context.Context) (due, bool) {
	for {
		r.mu.Lock()
		if n := len(r.queue); n > 0 {
			d := r.queue[n-1]
			r.queue = r.queue[:0]
			r.stats.Skipped += n - 1
			r.mu.Unlock()
			return d, true
		}
		closed := r.closed
		r.mu.Unlock()
		if closed {
			r.end(ctx, nil)
			return due{}, false
		}
		select {
		case <-ctx.Done():
			r.end(ctx, nil)
			return due{}, false
		case <-r.wake:
		}
	}
}

// end marks the background loop ended, keeping err unless ctx ended (Stop, or the
// caller's shutdown: not a failure).
func (r *Runner) end(ctx context.Context, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended = true
	if err != nil && ctx.Err() == nil {
		r.err = err
	}
}

// drain closes the background queue and waits for the loop to run what it holds.
func (r *Runner) drain(ctx context.Context) error {
	if !r.background {
		return nil
	}
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.signal()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-r.done:
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}
