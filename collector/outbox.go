package collector

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gpupool/gpupool/collector/spool"
)

// outbox delivers messages to JetStream. Without a spool it retries each message
// until acknowledged (the caller blocks). With a spool it never blocks for long:
// when a publish fails, or while older messages wait in the spool, the message is
// appended to the spool, and drain publishes the spool in order once NATS answers.
type outbox struct {
	pub        Publisher
	spool      *spool.Spool
	timeout    time.Duration
	maxBackoff time.Duration
	log        *slog.Logger
	metrics    *Metrics
	kick       chan struct{}
	spooling   atomic.Bool

	errors, spooled, dropped atomic.Uint64
}

func newOutbox(pub Publisher, sp *spool.Spool, timeout, maxBackoff time.Duration, log *slog.Logger, m *Metrics) *outbox {
	return &outbox{pub: pub, spool: sp, timeout: timeout, maxBackoff: maxBackoff, log: log, metrics: m, kick: make(chan struct{}, 1)}
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

// send delivers msg, or spools it.
func (o *outbox) send(ctx context.Context, msg *nats.Msg) error {
	if o.spool == nil {
		return o.publishRetrying(ctx, msg)
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
		return fmt.Errorf("collector: spool: %w", err)
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

// publishRetrying publishes until acknowledged or ctx ends.
func (o *outbox) publishRetrying(ctx context.Context, msg *nats.Msg) error {
	backoff := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := o.publishOnce(ctx, msg)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("collector: publish %s: %w", msg.Subject, ctx.Err())
		}
		if attempt == 1 || attempt%10 == 0 {
			o.log.Warn("publish failed, retrying", "subject", msg.Subject, "attempt", attempt, "backoff", backoff, "err", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("collector: publish %s: %w", msg.Subject, ctx.Err())
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, o.maxBackoff)
	}
}

// drain publishes the spool, oldest first, until ctx ends.
func (o *outbox) drain(ctx context.Context) {
	if o.spool == nil {
		return
	}
	backoff := 100 * time.Millisecond
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
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, o.maxBackoff)
			continue
		}
		backoff = 100 * time.Millisecond
		if err := o.spool.Ack(num); err != nil {
			o.log.Error("spool cursor not saved; the message may be sent again (deduplicated by ID)", "err", err)
		}
		o.metrics.spoolRecords.Set(float64(o.spool.Len()))
	}
}
