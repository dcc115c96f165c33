package bus

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Sender makes one attempt at delivering a message. A JetStreamSender publishes it
// and waits for the stream's ack; the collector's outbox also spools it while NATS
// is unreachable. An error marked Permanent is not retried.
type Sender interface {
	Send(ctx context.Context, msg *nats.Msg) error
}

// MsgPublisher is the part of JetStream a JetStreamSender uses;
// jetstream.JetStream implements it.
type MsgPublisher interface {
	PublishMsg(ctx context.Context, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error)
}

// defaultSendTimeout bounds one publish attempt when JetStreamSender.Timeout is 0.
const defaultSendTimeout = 5 * time.Second

// JetStreamSender publishes each message to JetStream and waits for the ack.
type JetStreamSender struct {
	JS MsgPublisher
	// Timeout bounds one attempt (0: 5 s).
	Timeout time.Duration
}

var _ Sender = JetStreamSender{}

// Send publishes msg once and waits for its ack.
func (s JetStreamSender) Send(ctx context.Context, msg *nats.Msg) error {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = defaultSendTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if _, err := s.JS.PublishMsg(ctx, msg); err != nil {
		return fmt.Errorf("publish to %s: %w", msg.Subject, err)
	}
	return nil
}
