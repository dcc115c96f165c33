package findings

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/schemas"
)

// Publisher sends one message to the bus. msgID identifies the message for
// deduplication (JetStream's Nats-Msg-Id): a retried publish of the same event
// carries the same ID.
type Publisher interface {
	Publish(ctx context.Context, subject, msgID string, data []byte) error
}

// PublisherFunc adapts a function to Publisher.
type PublisherFunc func(ctx context.Context, subject, msgID string, data []byte) error

// Publish calls f.
func (f PublisherFunc) Publish(ctx context.Context, subject, msgID string, data []byte) error {
	return f(ctx, subject, msgID, data)
}

// JetStreamPublisher publishes to JetStream and waits for the stream's ack. A stream
// must capture gpupool.findings.> (bus.FindingsPrefix), or every publish fails with
// "no responders".
type JetStreamPublisher struct {
	JS jetstream.JetStream
}

var _ Publisher = JetStreamPublisher{}

// Publish publishes data on subject with msgID as its Nats-Msg-Id.
func (p JetStreamPublisher) Publish(ctx context.Context, subject, msgID string, data []byte) error {
	if _, err := p.JS.Publish(ctx, subject, data, jetstream.WithMsgID(msgID)); err != nil {
		return fmt.Errorf("publish %s: %w", subject, err)
	}
	return nil
}

// event is one message to publish.
type event struct {
	name schemas.FindingEvent
	f    schemas.Finding
}

// Subject returns the subject findings of kind are published on.
func Subject(kind schemas.FindingKind) string { return bus.FindingsSubject(string(kind)) }

// publish sends the events; a failure is logged and counted, not returned: the
// findings are in the table already, and a pass must not fail because the bus is
// down. Such an event is not re-sent (the table, not the bus, is the record).
func (a *Analyzer) publish(ctx context.Context, events []event) (sent, failed int) {
	if a.pub == nil {
		return 0, 0
	}
	for i := range events {
		e := &events[i]
		data, err := schemas.EncodeFindingMessage(&schemas.FindingMessage{Event: e.name, Finding: e.f})
		if err == nil {
			msgID := fmt.Sprintf("%s/%d/%s/%d", e.f.ID, e.f.Episode, e.name, e.f.UpdatedAt.UnixMilli())
			err = a.pub.Publish(ctx, Subject(e.f.Kind), msgID, data)
		}
		if err != nil {
			failed++
			a.log.Warn("publish finding failed", "id", e.f.ID, "kind", e.f.Kind, "event", e.name, "err", err)
			continue
		}
		sent++
	}
	return sent, failed
}
