package ingest

import (
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/bus/bustest"
)

// TestDeadLetterOnceWhenRedelivered: a message dead-lettered, then delivered
// again before its Term reached the server (its ack wait passed), is
// terminated again but counted once, and the dead-letter stream holds it once.
func TestDeadLetterOnceWhenRedelivered(t *testing.T) {
	ctx := t.Context()
	b := bustest.Start(t)
	if err := bus.EnsureStreams(ctx, b.JS, bus.DefaultStreamsConfig()); err != nil {
		t.Fatal(err)
	}
	if _, err := b.JS.Publish(ctx, bus.SamplesSubject("c1", "n1"), []byte("junk")); err != nil {
		t.Fatal(err)
	}
	cons, err := b.JS.CreateOrUpdateConsumer(ctx, bus.StreamSamples, jetstream.ConsumerConfig{Durable: "dl",
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	p := &pipeline{js: b.JS, stream: bus.StreamSamples, kind: "samples", log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		metrics: NewMetrics(prometheus.NewRegistry())}
	cause := errors.New("malformed message: junk")
	for delivery := range 2 {
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		msg := <-batch.Messages()
		if msg == nil {
			t.Fatalf("delivery %d: no message fetched", delivery+1)
		}
		if delivery == 0 {
			msg = lostTerm{msg} // its Term never reaches the server: delivered again
		}
		if err := p.deadLetter(ctx, msg, 1, cause); err != nil {
			t.Fatal(err)
		}
	}
	if got := p.deadLettered.Load(); got != 1 {
		t.Errorf("dead letters counted %d, want 1", got)
	}
	info, err := b.JS.Stream(ctx, bus.StreamDeadLetter)
	if err != nil {
		t.Fatal(err)
	}
	if n := info.CachedInfo().State.Msgs; n != 1 {
		t.Errorf("the dead-letter stream holds %d messages, want 1", n)
	}
}

// lostTerm is a delivery whose Term is lost on the way to the server.
type lostTerm struct{ jetstream.Msg }

func (lostTerm) Term() error { return nil }
