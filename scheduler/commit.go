package scheduler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/gpupool/gpupool/schemas"
)

// Group commit: a submit is answered only once its job, its submit audit row
// and its idempotency key are in the journal on disk. Submits that arrive
// together share one journal line and one fsync: each joins the next batch, and
// one goroutine at a time writes the batches, one after another, while more
// callers join the one after. After the line is durable, the batch's audit rows
// go to the recorder in one call and its job events to the outbox (outbox.go),
// published in the background (Actions shows rows not yet recorded); a row the
// recorder refused stays in the state (snapshot or journal) and is recorded
// again by the next batch or the next start, so a crash anywhere leaves no job
// without its submit row.

// commitBatch is the callers waiting on one journal write.
type commitBatch struct {
	done chan struct{}
	err  error
}

// groupCommit queues callers into batches; at most one is written at a time.
type groupCommit struct {
	mu      sync.Mutex
	next    *commitBatch // the batch new callers join; nil: none waits
	running bool         // a goroutine is writing batches
	// recording: a goroutine hands durable rows and events on; again: more
	// came meanwhile.
	recording, again bool
}

// durable returns once every change made before the call is on disk (its
// batch's error, if the state could not be written), or when ctx ends.
func (s *Service) durable(ctx context.Context) error {
	g := &s.commit
	g.mu.Lock()
	if g.next == nil {
		g.next = &commitBatch{done: make(chan struct{})}
	}
	b := g.next
	if !g.running {
		g.running = true
		go s.commitLoop(context.WithoutCancel(ctx))
	}
	g.mu.Unlock()
	select {
	case <-b.done:
		return b.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// commitLoop writes batches until none waits.
func (s *Service) commitLoop(ctx context.Context) {
	g := &s.commit
	for {
		g.mu.Lock()
		b := g.next
		g.next = nil
		if b == nil {
			g.running = false
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
		b.err = s.saveStateErr()
		close(b.done)
		s.kickRecord(ctx)
	}
}

// kickRecord hands the audit rows and job events made durable to the recorder
// and the publisher, in the background: the callers were answered once their
// rows were on disk, and Actions shows rows not yet recorded.
func (s *Service) kickRecord(ctx context.Context) {
	g := &s.commit
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.recording {
		g.again = true
		return
	}
	g.recording = true
	go func() {
		for {
			s.recordDurable(ctx)
			g.mu.Lock()
			if !g.again {
				g.recording = false
				g.mu.Unlock()
				return
			}
			g.again = false
			g.mu.Unlock()
		}
	}()
}

// recordDurable records the audit rows written to the state but not yet to the
// recorder, and publishes the job events waiting in the outbox.
func (s *Service) recordDurable(ctx context.Context) {
	s.auditMu.Lock()
	rows := s.unrecorded
	s.auditMu.Unlock()
	if len(rows) > 0 {
		if err := s.rec.Record(ctx, rows); err != nil {
			s.countRecordErr()
			s.log.Warn("record audit rows; they stay in the job state and are recorded again later", "rows", len(rows), "err", err)
		} else {
			for i := range rows {
				s.metrics.action(&rows[i])
			}
			s.auditMu.Lock()
			// Rows added meanwhile stay; those just recorded go.
			s.unrecorded = s.unrecorded[len(rows):]
			s.auditMu.Unlock()
		}
	}
	s.recordFragmentation(ctx)
	s.flushOutbox(ctx)
}

// pendingSubmit is what a submit adds to the next journal line besides its job
// and its event (stage): its audit row, its idempotency key.
func (s *Service) pendingSubmit(row *Action, key *idemEntry) {
	if row != nil {
		s.pendAudit = append(s.pendAudit, *row)
	}
	if key != nil {
		s.pendIdem = append(s.pendIdem, *key)
	}
}

// takePending returns what submits added since the last journal line and
// forgets it; call with mu held.
func (s *Service) takePending() (audit []Action, idem []idemEntry, events []schemas.JobEvent) {
	audit, idem, events = s.pendAudit, s.pendIdem, s.pendEvents
	s.pendAudit, s.pendIdem, s.pendEvents = nil, nil, nil
	return audit, idem, events
}

// putBack returns what takePending took, for the next write, after a write
// failed; call with mu held.
func (s *Service) putBack(audit []Action, events []schemas.JobEvent) {
	s.pendAudit = append(audit, s.pendAudit...)
	s.pendEvents = append(events, s.pendEvents...)
}

// notDurable is what a submit's caller is told when its batch was not written
// (the log has the file and the cause) or it stopped waiting.
func notDurable(id string, err error) error {
	if errors.Is(err, ErrNotDurable) {
		return fmt.Errorf("scheduler: submit %s: %w (retry with the same idempotency key: it returns this job once it is on disk)", id, ErrNotDurable)
	}
	return fmt.Errorf("scheduler: submit %s: %w", id, err)
}

// mergeActions adds extra rows (not yet recorded) to rows read from the
// recorder, each ID once, oldest first, the newest limit (0: all).
func mergeActions(rows, extra []Action, limit int) []Action {
	if len(extra) == 0 {
		return rows
	}
	seen := make(map[string]bool, len(rows))
	for _, a := range rows {
		seen[a.ID] = true
	}
	for _, a := range extra {
		if !seen[a.ID] {
			seen[a.ID] = true
			rows = append(rows, a)
		}
	}
	slices.SortStableFunc(rows, func(a, b Action) int { return a.Time.Compare(b.Time) })
	if limit > 0 && len(rows) > limit {
		rows = rows[len(rows)-limit:]
	}
	return rows
}
