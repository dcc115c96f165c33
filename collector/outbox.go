package collector

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/collector/spool"
)

// outbox delivers messages to JetStream; it is the collector's bus.Sender. Without
// a spool, Send is one publish attempt, which the caller retries (and blocks on).
// With a spool it never blocks for long: when a publish fails, or while older
// messages wait in the spool, the message is appended to the spool, and drain
// publishes the spool in order once NATS answers.
type outbox struct {
	pub      Publisher
	spool    *spool.Spool
	timeout  time.Duration
	backoff  bus.Backoff
	log      *slog.Logger
	metrics  *Metrics
	kick     chan struct{}
	spooling atomic.Bool

	errors, spooled, dropped atomic.Uint64
}

var _ bus.Sender = (*outbox)(nil)

func newOutbox(pub Publisher, sp *spool.Spool, timeout time.Duration, backoff bus.Backoff, log *slog.Logger, m *Metrics) *outbox {
	return &outbox{pub: pub, spool: sp, timeout: timeout, backoff: backoff, log: log, metrics: m, kick: make(chan struct{}, 1)}
}

func (o *outbox) publishOnce(ctx context.Context, msg *nats.Msg) error {
	pctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	_, err := o.pub.PublishMsg(pctx, msg)
	if err != nil {
		o.errors.Add(1)
		o.metrics.publishErrors.Inc()
	}
	return err
}

// Send publishes msg once, or spools it. A spool that cannot take it is a
// permanent error.
func (o *outbox) Send(ctx context.Context, msg *nats.Msg) error {
	if o.spool == nil {
		return o.publishOnce(ctx, msg)
	}
	if o.spool.Len() == 0 {
		// A publish cut short by shutdown may or may not have reached the
		// stream: spool it too. The next start republishes it under the same
		// Nats-Msg-Id, which the stream and ingest deduplicate, so it is neither
		// lost nor counted twice.
		if err := o.publishOnce(ctx, msg); err == nil {
			return nil
		} else if ctx.Err() == nil && !o.spooling.Swap(true) {
			o.log.Warn("NATS unreachable, spooling to disk", "err", err, "spool_records", o.spool.Len())
		}
	}
	dropped, err := o.spool.Append(spool.Record{Subject: msg.Subject, MsgID: msg.Header.Get(nats.MsgIdHdr), Data: msg.Data})
	if err != nil {
		return bus.Permanent(fmt.Errorf("spool: %w", err))
	}
	o.spooled.Add(1)
	o.metrics.spooled.Inc()
	if dropped > 0 {
		o.dropped.Add(dropped)
		o.metrics.spoolDropped.Add(float64(dropped))
		o.log.Warn("spool full, dropped oldest messages", "dropped", dropped, "spool_bytes", o.spool.Bytes())
	}
	o.metrics.spoolRecords.Set(float64(o.spool.Len()))
	select {
	case o.kick <- struct{}{}:
	default:
	}
	return nil
}

// drain publishes the spool, oldest first, until ctx ends.
func (o *outbox) drain(ctx context.Context) {
	if o.spool == nil {
		return
	}
	failures := 0
	for ctx.Err() == nil {
		rec, num, ok, err := o.spool.Peek()
		if err != nil {
			o.log.Error("spool unreadable; skipping a record", "err", err)
			_ = o.spool.Ack(num)
			continue
		}
		if !ok {
			if o.spooling.Swap(false) {
				o.log.Info("spool drained, publishing live")
			}
			o.metrics.spoolRecords.Set(0)
			select {
			case <-ctx.Done():
			case <-o.kick:
			case <-time.After(time.Second):
			}
			continue
		}
		msg := &nats.Msg{Subject: rec.Subject, Data: rec.Data, Header: nats.Header{}}
		if rec.MsgID != "" {
			msg.Header.Set(nats.MsgIdHdr, rec.MsgID)
		}
		if err := o.publishOnce(ctx, msg); err != nil {
			failures++
			select {
			case <-ctx.Done():
			case <-time.After(o.backoff.Delay(failures)):
			}
			continue
		}
		failures = 0
		if err := o.spool.Ack(num); err != nil {
			o.log.Error("spool cursor not saved; the message may be sent again (deduplicated by ID)", "err", err)
		}
		o.metrics.spoolRecords.Set(float64(o.spool.Len()))
	}
}
