package bus

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gpupool/gpupool/schemas"
)

// JobRecorder keeps a copy of the job events published (collector --record);
// collector.Recorder and replay.Recorder implement it.
type JobRecorder interface {
	RecordJobs(events []schemas.JobEvent) error
}

// PublisherOption changes how a JobPublisher is built.
type PublisherOption func(*JobPublisher)

// WithLogger sets the logger retries are reported to, tagged with the producer
// (default: discarded).
func WithLogger(log *slog.Logger) PublisherOption {
	return func(p *JobPublisher) {
		if log != nil {
			p.log = log
		}
	}
}

// WithBackoff replaces DefaultBackoff as the retry policy.
func WithBackoff(b Backoff) PublisherOption { return func(p *JobPublisher) { p.backoff = b } }

// WithTimeout bounds each Publish call, retries included, to d: without it
// Publish retries until its ctx ends.
func WithTimeout(d time.Duration) PublisherOption { return func(p *JobPublisher) { p.timeout = d } }

// WithRecorder records every batch of events once it is delivered.
func WithRecorder(r JobRecorder) PublisherOption { return func(p *JobPublisher) { p.rec = r } }

// AsScheduler publishes on SchedulerJobsSubject(cluster) instead of
// JobsSubject(cluster): the scheduler's own job events (source scheduler), which
// ingest accepts only on that subject, and only the scheduler role may publish on.
func AsScheduler() PublisherOption {
	return func(p *JobPublisher) { p.subject = SchedulerJobsSubject }
}

// WithContentIDs names each message by its content instead of <producer>-<seq>:
// "c-" and a hash of its subject and events (every field), so that the same
// batch published again, by this process or by the next one after a restart,
// carries the same message ID and JetStream's duplicate window stores it once.
// For a publisher that keeps events until they are acknowledged and publishes
// them again (the scheduler's outbox).
func WithContentIDs() PublisherOption { return func(p *JobPublisher) { p.contentIDs = true } }

// JobPublisher publishes job events: grouped by cluster, in order of first
// appearance, one schemas.JobEventBatch per cluster on JobsSubject(cluster) (or
// SchedulerJobsSubject(cluster), AsScheduler), with
// the schema header and the message ID <producer>-<seq> (or one from the
// content, WithContentIDs), so that a batch sent
// again after a lost ack is stored once. Each batch goes through the Sender under
// the Backoff retry policy. It is safe for concurrent use.
type JobPublisher struct {
	send     Sender
	producer string
	backoff  Backoff
	timeout  time.Duration
	log      *slog.Logger
	rec      JobRecorder
	subject  func(cluster string) string
	// contentIDs: message IDs from the content (WithContentIDs).
	contentIDs bool

	seq   atomic.Uint64
	count atomic.Uint64
}

// ProducerName returns kind-<8 random hex digits>, a producer name (and message
// ID prefix) no other process shares.
func ProducerName(kind string) string {
	var id [4]byte
	_, _ = rand.Read(id[:])
	return kind + "-" + hex.EncodeToString(id[:])
}

// NewJobPublisher returns a publisher sending through send as producer (see
// ProducerName).
func NewJobPublisher(send Sender, producer string, opts ...PublisherOption) (*JobPublisher, error) {
	if send == nil {
		return nil, errors.New("bus: job publisher: a sender is required")
	}
	if producer == "" {
		return nil, errors.New("bus: job publisher: producer: empty")
	}
	p := &JobPublisher{send: send, producer: producer, backoff: DefaultBackoff(), log: slog.New(slog.DiscardHandler), subject: JobsSubject}
	for _, o := range opts {
		o(p)
	}
	if err := p.backoff.Validate(); err != nil {
		return nil, fmt.Errorf("bus: job publisher: backoff: %w", err)
	}
	if p.timeout < 0 {
		return nil, fmt.Errorf("bus: job publisher: timeout: %s is negative", p.timeout)
	}
	p.log = p.log.With("producer", producer)
	return p, nil
}

// Published is the number of events delivered so far.
func (p *JobPublisher) Published() uint64 { return p.count.Load() }

// Publish delivers events, one batch per cluster, retrying each until it is
// delivered or ctx (bounded by WithTimeout) ends. The batches before a failed
// one stay delivered.
func (p *JobPublisher) Publish(ctx context.Context, events []schemas.JobEvent) error {
	if len(events) == 0 {
		return nil
	}
	if p.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.timeout)
		defer cancel()
	}
	byCluster := map[string][]schemas.JobEvent{}
	var order []string
	for _, e := range events {
		if _, ok := byCluster[e.Cluster]; !ok {
			order = append(order, e.Cluster)
		}
		byCluster[e.Cluster] = append(byCluster[e.Cluster], e)
	}
	for _, cluster := range order {
		if err := p.publishBatch(ctx, cluster, byCluster[cluster]); err != nil {
			return err
		}
	}
	return nil
}

// publishBatch delivers one cluster's events.
func (p *JobPublisher) publishBatch(ctx context.Context, cluster string, events []schemas.JobEvent) error {
	seq := p.seq.Add(1)
	data, err := schemas.EncodeJobEvents(nil, &schemas.JobEventBatch{Producer: p.producer, Seq: seq, Events: events})
	if err != nil {
		return fmt.Errorf("bus: encode job events: %w", err)
	}
	msg := &nats.Msg{Subject: p.subject(cluster), Data: data, Header: nats.Header{}}
	msg.Header.Set(schemas.HeaderSchema, schemas.SchemaJobs)
	id := p.producer + "-" + strconv.FormatUint(seq, 10)
	if p.contentIDs {
		id = contentID(msg.Subject, events)
	}
	msg.Header.Set(nats.MsgIdHdr, id)
	err = p.backoff.Retry(ctx, func(ctx context.Context) error { return p.send.Send(ctx, msg) },
		func(n int, wait time.Duration, err error) {
			if n == 1 || n%10 == 0 {
				p.log.Warn("publish job events failed, retrying", "subject", msg.Subject, "attempt", n, "backoff", wait, "err", err)
			}
		})
	if err != nil {
		return fmt.Errorf("bus: publish %d job events to %s: %w", len(events), msg.Subject, err)
	}
	p.count.Add(uint64(len(events)))
	if p.rec != nil {
		if err := p.rec.RecordJobs(events); err != nil {
			p.log.Warn("record job events", "err", err)
		}
	}
	return nil
}

// contentID is the message ID of events on subject by their content (WithContentIDs).
func contentID(subject string, events []schemas.JobEvent) string {
	h := sha256.New()
	h.Write([]byte(subject + "\n"))
	_ = json.NewEncoder(h).Encode(events) // a struct of strings, numbers, slices and a map: it encodes, maps in key order
	return "c-" + hex.EncodeToString(h.Sum(nil)[:16])
}
