package bus_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/bus/bustest"
	"github.com/gpupool/gpupool/schemas"
)

var t0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// fastRetry keeps the tests' waits short.
var fastRetry = bus.WithBackoff(bus.Backoff{Initial: time.Millisecond, Max: 4 * time.Millisecond})

func newPublisher(t *testing.T, send bus.Sender, opts ...bus.PublisherOption) *bus.JobPublisher {
	t.Helper()
	p, err := bus.NewJobPublisher(send, bus.ProducerName("test"), append([]bus.PublisherOption{fastRetry}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func jobsStream(t *testing.T, js jetstream.JetStream) jetstream.Stream {
	t.Helper()
	stream, err := js.Stream(t.Context(), bus.StreamJobs)
	if err != nil {
		t.Fatal(err)
	}
	return stream
}

func streamMsgs(t *testing.T, s jetstream.Stream) uint64 {
	t.Helper()
	info, err := s.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

// TestJobPublisher publishes events of two clusters and reads them back from the
// jobs stream.
func TestJobPublisher(t *testing.T) {
	b := bustest.Start(t)
	p := newPublisher(t, bus.JetStreamSender{JS: b.JS})
	events := []schemas.JobEvent{
		{TimeMs: t0.UnixMilli(), Job: "sched/nlp/1", Event: schemas.EventSubmit, Source: schemas.SourceScheduler, Attempt: 1, Team: "nlp"},
		{TimeMs: t0.UnixMilli() + 1, Job: "sched/nlp/1", Event: schemas.EventAdmit, Cluster: "c1", Source: schemas.SourceScheduler, Attempt: 1},
		{TimeMs: t0.UnixMilli() + 1, Job: "sched/nlp/1", Event: schemas.EventStart, Cluster: "c1", Source: schemas.SourceScheduler, Attempt: 1},
	}
	if err := p.Publish(t.Context(), events); err != nil {
		t.Fatal(err)
	}
	stream := jobsStream(t, b.JS)
	var got []schemas.JobEvent
	subjects := map[string]bool{}
	for seq := uint64(1); seq <= 2; seq++ {
		m, err := stream.GetMsg(t.Context(), seq)
		if err != nil {
			t.Fatal(err)
		}
		subjects[m.Subject] = true
		if m.Header.Get(schemas.HeaderSchema) != schemas.SchemaJobs {
			t.Errorf("message %d: schema header %q", seq, m.Header.Get(schemas.HeaderSchema))
		}
		batch, err := schemas.DecodeJobEvents(m.Data)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, batch.Events...)
	}
	if len(got) != 3 || !subjects[bus.JobsSubject("")] || !subjects[bus.JobsSubject("c1")] || got[2].Event != schemas.EventStart {
		t.Fatalf("read back %d events on %v: %+v", len(got), subjects, got)
	}
	if p.Published() != 3 {
		t.Errorf("Published() = %d, want 3", p.Published())
	}
}

// TestJobPublisherAsScheduler: the scheduler's publisher puts each cluster's
// events on gpupool.jobs.<cluster>.scheduler, and the jobs stream, made as
// EnsureStreams makes it, stores them.
func TestJobPublisherAsScheduler(t *testing.T) {
	b := bustest.Start(t)
	p := newPublisher(t, bus.JetStreamSender{JS: b.JS}, bus.AsScheduler())
	events := []schemas.JobEvent{
		{TimeMs: t0.UnixMilli(), Job: "sched/nlp/1", Event: schemas.EventSubmit, Source: schemas.SourceScheduler, Attempt: 1, Team: "nlp"},
		{TimeMs: t0.UnixMilli() + 1, Job: "sched/nlp/1", Event: schemas.EventStart, Cluster: "c1", Source: schemas.SourceScheduler, Attempt: 1},
	}
	if err := p.Publish(t.Context(), events); err != nil {
		t.Fatal(err)
	}
	stream := jobsStream(t, b.JS)
	var subjects []string
	for seq := uint64(1); seq <= 2; seq++ {
		m, err := stream.GetMsg(t.Context(), seq)
		if err != nil {
			t.Fatal(err)
		}
		subjects = append(subjects, m.Subject)
	}
	if want := []string{"gpupool.jobs._.scheduler", "gpupool.jobs.c1.scheduler"}; !slices.Equal(subjects, want) {
		t.Fatalf("stored on %v, want %v", subjects, want)
	}
}

// flakySender fails the first fail attempts; with delivered set, a failed
// attempt still reaches the stream (an ack lost on the way back).
type flakySender struct {
	next      bus.Sender
	fail      int
	delivered bool
	attempts  atomic.Int64
}

func (s *flakySender) Send(ctx context.Context, msg *nats.Msg) error {
	n := s.attempts.Add(1)
	if int(n) > s.fail {
		return s.next.Send(ctx, msg)
	}
	if s.delivered {
		if err := s.next.Send(ctx, msg); err != nil {
			return err
		}
	}
	return errors.New("ack lost")
}

func oneEvent(job string) []schemas.JobEvent {
	return []schemas.JobEvent{{TimeMs: t0.UnixMilli(), Job: job, Event: schemas.EventStart, Cluster: "c1", Source: schemas.SourceScheduler, Attempt: 1}}
}

// recorder keeps what the publisher recorded.
type recorder struct {
	mu     sync.Mutex
	events []schemas.JobEvent
}

func (r *recorder) RecordJobs(events []schemas.JobEvent) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, events...)
	return nil
}

// TestJobPublisherRetries: failed attempts are retried until one is acknowledged,
// and a batch that reached the stream before its ack was lost is stored once.
func TestJobPublisherRetries(t *testing.T) {
	tests := []struct {
		name      string
		delivered bool
	}{
		{"publish failed", false},
		{"ack lost, deduplicated by message ID", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := bustest.Start(t)
			send := &flakySender{next: bus.JetStreamSender{JS: b.JS}, fail: 2, delivered: tt.delivered}
			rec := &recorder{}
			p := newPublisher(t, send, bus.WithRecorder(rec))
			if err := p.Publish(t.Context(), oneEvent("sched/nlp/1")); err != nil {
				t.Fatal(err)
			}
			if n := send.attempts.Load(); n != 3 {
				t.Errorf("%d attempts, want 3", n)
			}
			if n := streamMsgs(t, jobsStream(t, b.JS)); n != 1 {
				t.Errorf("the stream holds %d messages, want 1", n)
			}
			if p.Published() != 1 || len(rec.events) != 1 {
				t.Errorf("published %d, recorded %d events; want 1 and 1", p.Published(), len(rec.events))
			}
		})
	}
}

// TestJobPublisherTimeout: with WithTimeout, a publish to a sender that always
// fails gives up, and nothing is counted or recorded.
func TestJobPublisherTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		send := &flakySender{fail: 1 << 30}
		rec := &recorder{}
		p := newPublisher(t, send, bus.WithTimeout(time.Second), bus.WithRecorder(rec))
		err := p.Publish(t.Context(), oneEvent("sched/nlp/1"))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Publish = %v, want a deadline error", err)
		}
		if send.attempts.Load() < 2 || p.Published() != 0 || len(rec.events) != 0 {
			t.Errorf("%d attempts, published %d, recorded %d", send.attempts.Load(), p.Published(), len(rec.events))
		}
	})
}

// TestJobPublisherConcurrent publishes from several goroutines: every batch gets
// its own message ID, so none is dropped as a duplicate.
func TestJobPublisherConcurrent(t *testing.T) {
	b := bustest.Start(t)
	p := newPublisher(t, bus.JetStreamSender{JS: b.JS})
	const n = 20
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if err := p.Publish(t.Context(), oneEvent("sched/nlp/"+string(rune('a'+i)))); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := streamMsgs(t, jobsStream(t, b.JS)); got != n || p.Published() != n {
		t.Fatalf("stream holds %d messages, published %d; want %d", got, p.Published(), n)
	}
}

func TestNewJobPublisherValidates(t *testing.T) {
	send := bus.JetStreamSender{}
	tests := []struct {
		name     string
		send     bus.Sender
		producer string
		opts     []bus.PublisherOption
	}{
		{"no sender", nil, "p", nil},
		{"no producer", send, "", nil},
		{"bad backoff", send, "p", []bus.PublisherOption{bus.WithBackoff(bus.Backoff{})}},
		{"negative timeout", send, "p", []bus.PublisherOption{bus.WithTimeout(-time.Second)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := bus.NewJobPublisher(tt.send, tt.producer, tt.opts...); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

func TestBackoffDelay(t *testing.T) {
	b := bus.Backoff{Initial: 50 * time.Millisecond, Max: time.Second}
	want := []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, time.Second, time.Second}
	for i, w := range want {
		if got := b.Delay(i + 1); got != w {
			t.Errorf("Delay(%d) = %s, want %s", i+1, got, w)
		}
	}
	if got := b.Delay(1000); got != time.Second {
		t.Errorf("Delay(1000) = %s, want the cap", got)
	}
}

func TestRetry(t *testing.T) {
	b := bus.Backoff{Initial: time.Millisecond, Max: 2 * time.Millisecond}
	disk := errors.New("disk full")
	tests := []struct {
		name     string
		failures int
		err      error
		want     error
		attempts int
	}{
		{"succeeds at once", 0, nil, nil, 1},
		{"succeeds after failures", 3, errors.New("no responders"), nil, 4},
		{"permanent error is not retried", 5, bus.Permanent(disk), disk, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			attempts, reported := 0, 0
			err := b.Retry(t.Context(), func(context.Context) error {
				attempts++
				if attempts <= tt.failures {
					return tt.err
				}
				return nil
			}, func(n int, wait time.Duration, err error) {
				reported++
				if n != reported || wait != b.Delay(n) {
					t.Errorf("onFail(%d, %s), want (%d, %s)", n, wait, reported, b.Delay(reported))
				}
			})
			if err != tt.want || attempts != tt.attempts {
				t.Fatalf("Retry = %v after %d attempts, want %v after %d", err, attempts, tt.want, tt.attempts)
			}
		})
	}
	t.Run("ctx ends", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			err := b.Retry(ctx, func(context.Context) error { return errors.New("no responders") }, nil)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Retry = %v, want a deadline error", err)
			}
		})
	})
}
