package ingest

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/gpupool/gpupool/bus/bustest"
)

// TestAckHandle settles messages by reply subject alone, against a real
// JetStream server: an ack is never redelivered, a nak with a delay comes back
// after it, and in-progress keeps a message past its ack wait.
func TestAckHandle(t *testing.T) {
	ctx := t.Context()
	b := bustest.Start(t)
	if _, err := b.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "ACKT", Subjects: []string{"ackt.>"}}); err != nil {
		t.Fatal(err)
	}
	cons, err := b.JS.CreateOrUpdateConsumer(ctx, "ACKT", jetstream.ConsumerConfig{Durable: "t", AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"acked", "naked", "held"} {
		if _, err := b.JS.Publish(ctx, "ackt."+s, []byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	batch, err := cons.Fetch(3, jetstream.FetchMaxWait(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	h := map[string]ackHandle{}
	for m := range batch.Messages() {
		if h[string(m.Data())], err = newAckHandle(b.Conn, m); err != nil {
			t.Fatal(err)
		}
	}
	if len(h) != 3 {
		t.Fatalf("fetched %d messages, want 3", len(h))
	}
	naked := time.Now()
	if err := h["acked"].Ack(); err != nil {
		t.Fatal(err)
	}
	if err := h["naked"].NakWithDelay(300 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// Held for twice the ack wait, in progress every 300 ms, while the nak's
	// redelivery is awaited.
	var again []string
	for time.Since(naked) < 2*time.Second {
		if err := h["held"].InProgress(); err != nil {
			t.Fatal(err)
		}
		batch, err := cons.Fetch(3, jetstream.FetchMaxWait(300*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		for m := range batch.Messages() {
			again = append(again, string(m.Data()))
			if string(m.Data()) == "naked" && time.Since(naked) < 250*time.Millisecond {
				t.Fatalf("the nak with a 300 ms delay came back after %s", time.Since(naked))
			}
			if err := m.Ack(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(again) != 1 || again[0] != "naked" {
		t.Fatalf("redelivered %q, want only the naked message", again)
	}
	if err := h["held"].Ack(); err != nil {
		t.Fatal(err)
	}
	if err := b.Conn.Flush(); err != nil {
		t.Fatal(err)
	}
	waitFor := time.Now().Add(time.Minute) // a bound for a loaded machine; settled, it returns at once
	for {
		info, err := cons.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.NumAckPending == 0 && info.NumPending == 0 && info.AckFloor.Stream == 3 {
			break
		}
		if time.Now().After(waitFor) {
			t.Fatalf("consumer not settled: %d ack pending, %d pending, ack floor %d", info.NumAckPending, info.NumPending, info.AckFloor.Stream)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
