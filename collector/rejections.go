package collector

import (
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpupool/gpupool/bus"
)

// Subscriber is the part of a NATS connection the rejection watcher uses;
// *nats.Conn implements it.
type Subscriber interface {
	Subscribe(subject string, cb nats.MsgHandler) (*nats.Subscription, error)
}

// RejectionLogEvery is how often, at most, the watcher logs ingest's dead letters.
const RejectionLogEvery = time.Minute

// Rejections hears ingest's notices about this node's sample batches that it
// dead-lettered (bus.RejectedSubject), counts them in
// gpupool_collector_dead_lettered_total{reason} and logs a warning at most once
// a RejectionLogEvery with how many batches and rows were lost and why. Without
// it a collector whose samples ingest refuses (timestamps in the future, values
// out of bounds) would look healthy.
type Rejections struct {
	log     *slog.Logger
	metrics *Metrics
	every   time.Duration
	now     func() time.Time
	sub     *nats.Subscription

	mu      sync.Mutex
	last    time.Time // when the last warning was logged
	timer   *time.Timer
	pending map[string]*rejected // by reason, since the last warning
	total   RejectionStats
	stopped bool
}

// RejectionStats are totals since the watcher started.
type RejectionStats struct {
	// Batches is how many of the node's batches ingest dead-lettered; Rows how
	// many sample rows they held (as far as ingest could read them).
	Batches, Rows uint64
}

type rejected struct {
	batches, rows uint64
	example       string
}

// WatchRejections subscribes to subject (bus.RejectedSubject of this node, or a
// wildcard for a process publishing for several) and counts into m (nil: its own
// unregistered metrics).
func WatchRejections(nc Subscriber, subject string, m *Metrics, log *slog.Logger) (*Rejections, error) {
	if m == nil {
		m = NewMetrics(nil)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Rejections{log: log.With("component", "collector"), metrics: m, every: RejectionLogEvery, now: time.Now, pending: map[string]*rejected{}}
	sub, err := nc.Subscribe(subject, r.handle)
	if err != nil {
		return nil, fmt.Errorf("collector: subscribe to ingest's rejection notices %s: %w", subject, err)
	}
	r.sub = sub
	return r, nil
}

func (r *Rejections) handle(m *nats.Msg) {
	reason := m.Header.Get(bus.HeaderRejectReason)
	if reason == "" {
		reason = "other"
	}
	rows, _ := strconv.ParseUint(m.Header.Get(bus.HeaderRejectRows), 10, 64)
	r.metrics.deadLettered.WithLabelValues(reason).Inc()
	r.metrics.deadLetteredRows.WithLabelValues(reason).Add(float64(rows))
	r.mu.Lock()
	defer r.mu.Unlock()
	r.total.Batches++
	r.total.Rows += rows
	p := r.pending[reason]
	if p == nil {
		p = &rejected{}
		r.pending[reason] = p
	}
	p.batches++
	p.rows += rows
	if p.example == "" {
		p.example = string(m.Data)
	}
	wait := r.every - r.now().Sub(r.last)
	switch {
	case r.stopped:
	case wait <= 0:
		r.flushLocked()
	case r.timer == nil:
		r.timer = time.AfterFunc(wait, r.flush)
	}
}

func (r *Rejections) flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.flushLocked()
}

// flushLocked logs what was rejected since the last warning, one line per reason.
func (r *Rejections) flushLocked() {
	if r.timer != nil {
		r.timer.Stop() // a no-op when it is the timer calling
		r.timer = nil
	}
	if len(r.pending) == 0 {
		return
	}
	since := r.last
	r.last = r.now()
	for reason, p := range r.pending {
		args := []any{"batches", p.batches, "rows", p.rows, "reason", reason, "error", p.example}
		if !since.IsZero() {
			args = append(args, "since", since.UTC().Format(time.RFC3339))
		}
		r.log.Warn("ingest dead-lettered this node's samples; they are not stored", args...)
	}
	clear(r.pending)
}

// DeadLettered is the gpupool_collector_dead_lettered_total counter of reason,
// for tests.
func (m *Metrics) DeadLettered(reason string) prometheus.Counter {
	return m.deadLettered.WithLabelValues(reason)
}

// Stats returns the totals since the watcher started.
func (r *Rejections) Stats() RejectionStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total
}

// Stop unsubscribes and logs what was not logged yet.
func (r *Rejections) Stop() {
	if r.sub != nil {
		_ = r.sub.Unsubscribe()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopped = true
	r.flushLocked()
}
