package bus_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/bus/bustest"
)

// idSender records the message IDs it is given, then sends.
type idSender struct {
	next bus.Sender
	ids  []string
}

func (s *idSender) Send(ctx context.Context, m *nats.Msg) error {
	s.ids = append(s.ids, m.Header.Get(nats.MsgIdHdr))
	return s.next.Send(ctx, m)
}

// TestJobPublisherContentIDs: with WithContentIDs, the same events published
// again, by the same publisher or by another process's (another producer name),
// carry the same message ID and the stream stores them once; other events, or
// the same on another subject, get another ID.
func TestJobPublisherContentIDs(t *testing.T) {
	b := bustest.Start(t)
	send := &idSender{next: bus.JetStreamSender{JS: b.JS}}
	first := newPublisher(t, send, bus.WithContentIDs(), bus.AsScheduler())
	restarted := newPublisher(t, send, bus.WithContentIDs(), bus.AsScheduler())
	events := oneEvent("sched/nlp/1")
	for _, p := range []*bus.JobPublisher{first, first, restarted} {
		if err := p.Publish(t.Context(), events); err != nil {
			t.Fatal(err)
		}
	}
	if n := streamMsgs(t, jobsStream(t, b.JS)); n != 1 {
		t.Fatalf("the same events published 3 times: the stream holds %d messages, want 1 (ids %v)", n, send.ids)
	}
	if send.ids[0] != send.ids[1] || send.ids[0] != send.ids[2] {
		t.Errorf("message ids %v, want one id three times", send.ids)
	}
	other := oneEvent("sched/nlp/2")
	if err := first.Publish(t.Context(), other); err != nil {
		t.Fatal(err)
	}
	plain := newPublisher(t, send, bus.WithContentIDs())
	if err := plain.Publish(t.Context(), events); err != nil {
		t.Fatal(err)
	}
	if n := streamMsgs(t, jobsStream(t, b.JS)); n != 3 {
		t.Errorf("another job's events and the same on another subject: the stream holds %d messages, want 3 (ids %v)", n, send.ids)
	}
}
