package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/schemas"
)

// BusNotifier sends the scheduler's notices to owners through the alerting
// pipeline: the notice's JSON (schemas.Notice, event "notice") on
// gpupool.alerts.<team>, which the Slack alerter routes to the team's channel.
// Each notice has a message ID made of its finding, episode, policy and next
// action, so a notice sent twice is stored once.
type BusNotifier struct {
	js      jetstream.JetStream
	timeout time.Duration
}

var _ scheduler.Notifier = (*BusNotifier)(nil)

// NewBusNotifier returns a notifier publishing on js.
func NewBusNotifier(js jetstream.JetStream) *BusNotifier {
	return &BusNotifier{js: js, timeout: 5 * time.Second}
}

// Notify publishes n and waits for JetStream to store it.
func (b *BusNotifier) Notify(ctx context.Context, n schemas.Notice) error {
	f := &n.Finding
	data, err := json.Marshal(n)
	if err != nil {
		return fmt.Errorf("audit: encode notice: %w", err)
	}
	msg := &nats.Msg{Subject: bus.AlertsSubject(n.Team), Data: data, Header: nats.Header{}}
	msg.Header.Set(nats.MsgIdHdr, "notice-"+f.ID+"-"+strconv.FormatUint(uint64(f.Episode), 10)+"-"+n.Policy+"-"+n.NextAction)
	pctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	if _, err := b.js.PublishMsg(pctx, msg); err != nil {
		return fmt.Errorf("audit: publish notice for %s to %s: %w", f.ID, msg.Subject, err)
	}
	return nil
}
