package scheduler

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/schemas"
)

// The job event outbox: the events of each state change (a submit, a pass, a
// finish) are kept until the publisher acknowledged them, and published in
// order, one batch per change. A failed publish leaves them where they are; they
// are published again by the next pass once the backoff (outboxRetry) has
// passed, and every event that comes meanwhile waits behind them, so that
// ingest sees them in order. The outbox keeps at most its cap of events
// (DefaultOutboxCap, WithOutboxCap): past it the oldest batches are dropped,
// counted and logged as an error.
//
// With a job state file, a change's events are written in the journal line that
// holds the change (journal.go), and handed to the outbox only once that line
// is on disk; once published, a marker line records how far the outbox is
// published (or dropped), and a restart publishes again what the state holds
// past it. The marker is written without an fsync: a crash of the machine may
// lose it, and the events are then published twice — with the same message IDs
// (bus.WithContentIDs), which JetStream's duplicate window and ingest's
// duplicate rows drop.

// DefaultOutboxCap is how many job events the outbox keeps unpublished at most.
const DefaultOutboxCap = 100_000

// outboxRetry is the wait before the outbox is published again after failures:
// 1 s after the first, doubling up to a minute.
var outboxRetry = bus.Backoff{Initial: time.Second, Max: time.Minute}

// outboxEntry is the events of one state change, published as one batch. N
// numbers entries in order, across restarts (the state keeps them).
type outboxEntry struct {
	N      uint64             `json:"n"`
	Events []schemas.JobEvent `json:"events"`
}

// outbox is the entries not yet published. flushMu is held by the one flush at
// a time (so entries go out in order), mu guards the rest; flushMu is taken
// before saveMu, mu after every other lock.
type outbox struct {
	flushMu  sync.Mutex
	mu       sync.Mutex
	entries  []outboxEntry
	events   int       // events in entries
	last     uint64    // the last N handed out
	done     uint64    // every entry up to done is published or dropped
	failures int       // consecutive failed publishes
	retryAt  time.Time // no publish before, after a failure
	cap      int
}

// nextN hands out the next entry's number.
func (o *outbox) nextN() uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.last++
	return o.last
}

// push adds e (numbered by nextN) and drops the oldest entries while the outbox
// holds more than its cap of events (never e itself); it returns the events
// dropped and the events held.
func (o *outbox) push(e outboxEntry) (dropped, held int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.entries = append(o.entries, e)
	o.events += len(e.Events)
	for o.events > o.cap && len(o.entries) > 1 {
		d := o.entries[0]
		o.entries = o.entries[1:]
		o.events -= len(d.Events)
		dropped += len(d.Events)
		o.done = max(o.done, d.N)
	}
	return dropped, o.events
}

// head is the entry to publish next: none when the outbox is empty or waits
// after a failure; retry says it failed before.
func (o *outbox) head(now time.Time) (e outboxEntry, retry, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.entries) == 0 || (o.failures > 0 && now.Before(o.retryAt)) {
		return outboxEntry{}, false, false
	}
	return o.entries[0], o.failures > 0, true
}

// sent forgets the entries up to n, published; it returns the events held.
func (o *outbox) sent(n uint64) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	for len(o.entries) > 0 && o.entries[0].N <= n {
		o.events -= len(o.entries[0].Events)
		o.entries = o.entries[1:]
	}
	o.done = max(o.done, n)
	o.failures = 0
	return o.events
}

// failed starts the wait after a failed publish, and returns it.
func (o *outbox) failed(now time.Time) time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.failures++
	wait := outboxRetry.Delay(o.failures)
	o.retryAt = now.Add(wait)
	return wait
}

// state is the entries held and how far the outbox is published, for the job
// state file.
func (o *outbox) state() ([]outboxEntry, uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.entries), o.done
}

// held is the events held.
func (o *outbox) held() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.events
}

// doneN is how far the outbox is published or dropped.
func (o *outbox) doneN() uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.done
}

// restore sets the outbox to what a job state file held: entries past done.
func (o *outbox) restore(entries []outboxEntry, done uint64) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.entries, o.events, o.done, o.last = nil, 0, done, max(o.last, done)
	for _, e := range entries {
		o.last = max(o.last, e.N)
		if e.N > done {
			o.entries = append(o.entries, e)
			o.events += len(e.Events)
		}
	}
	return o.events
}

// WithOutboxCap sets how many job events the outbox keeps unpublished at most
// (default DefaultOutboxCap; 0 or less: the default).
func WithOutboxCap(n int) Option {
	return func(s *Service) {
		if n <= 0 {
			n = DefaultOutboxCap
		}
		s.outbox.cap = n
	}
}

// stage puts events in the outbox, or with a job state file in the next
// journal line (they reach the outbox once it is on disk). Call with mu held,
// in the same hold as the change the events tell of.
func (s *Service) stage(events []schemas.JobEvent) {
	if len(events) == 0 {
		return
	}
	if s.statePath != "" {
		s.pendEvents = append(s.pendEvents, events...)
		return
	}
	s.pushOutbox(outboxEntry{N: s.outbox.nextN(), Events: events})
}

// pushOutbox adds e to the outbox, counting and logging what the cap drops.
func (s *Service) pushOutbox(e outboxEntry) {
	dropped, held := s.outbox.push(e)
	s.metrics.outboxHeld(held)
	if dropped > 0 {
		s.metrics.outboxDropped(dropped)
		s.log.Error("job event outbox full: its oldest events dropped, never to be published (the bus has not acknowledged events for long)",
			"dropped", dropped, "cap", s.outbox.cap)
	}
}

// sendStaged publishes the events staged, without a job state file; with one,
// they wait for their journal line (save publishes them).
func (s *Service) sendStaged(ctx context.Context) {
	if s.statePath == "" {
		s.flushOutbox(ctx)
	}
}

// save writes the changes to the job state (if any) and publishes the outbox.
func (s *Service) save(ctx context.Context) {
	s.saveState()
	s.flushOutbox(ctx)
}

// flushOutbox publishes the outbox's entries in order, until it is empty, one
// fails (it waits for the backoff), or ctx ends; then, with a job state file,
// it records how far it got.
func (s *Service) flushOutbox(ctx context.Context) {
	s.outbox.flushMu.Lock()
	defer s.outbox.flushMu.Unlock()
	sent := false
	for ctx.Err() == nil {
		e, retry, ok := s.outbox.head(s.now())
		if !ok {
			break
		}
		if retry {
			s.metrics.inc(publishRetries)
		}
		if err := s.pub.Publish(ctx, e.Events); err != nil {
			wait := s.outbox.failed(s.now())
			s.metrics.inc(publishErrs)
			s.log.Warn("publish job events; kept in the outbox, published again later", "events", len(e.Events),
				"outbox_events", s.outbox.held(), "retry_in", wait, "err", err)
			break
		}
		s.metrics.outboxHeld(s.outbox.sent(e.N))
		sent = true
	}
	if sent && s.statePath != "" {
		s.markSent()
	}
}

// markSent appends a marker line to the journal: the outbox is published (or
// dropped) up to its done. It is not synced (see above); a failure is logged,
// and the next line or snapshot carries the marker.
func (s *Service) markSent() {
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	if s.jrnl == nil || s.mustCompact {
		return
	}
	data, err := json.Marshal(journalLine{Gen: s.gen, Seq: s.lastSeq, Sent: s.outbox.doneN()})
	if err == nil {
		err = s.jrnl.write(append(data, '\n'), false)
	}
	if err != nil {
		s.log.Warn("mark job events published in the journal; they may be published again after a restart", "err", err)
	}
}
