package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/schemas"
)

// Option changes how an Ingester is built.
type Option func(*Ingester)

// WithLogger sets the ingester's logger (default: discarded).
func WithLogger(log *slog.Logger) Option {
	return func(i *Ingester) {
		if log != nil {
			i.log = log
		}
	}
}

// WithMetrics makes the ingester report into m (default: unregistered metrics).
func WithMetrics(m *Metrics) Option {
	return func(i *Ingester) {
		if m != nil {
			i.metrics = m
		}
	}
}

// WithFault makes the pipelines call fn at each fault point (FaultAfterIntent,
// FaultAfterInsert, FaultAfterCommit); a non-nil error stops Run there as a crash
// would, without acking. Tests use it to interrupt ingest mid-batch.
func WithFault(fn func(kind, point string) error) Option {
	return func(i *Ingester) { i.fault = fn }
}

// WithClock replaces time.Now (for validating sample times against a simulated
// clock).
func WithClock(now func() time.Time) Option {
	return func(i *Ingester) { i.now = now }
}

// WithJobLookup sets where ingest reads the identity (cluster, team, project,
// queue) of the jobs it has not seen since it started, to refuse events that
// change it. Default: the sink, when it implements Querier (store.Store does);
// with none, ingest knows only the jobs it has seen.
func WithJobLookup(q Querier) Option {
	return func(i *Ingester) { i.lookup = q }
}

// WithRawRetention tells ingest how long the store keeps raw samples
// (store.raw_ttl_days): samples older than that less RetentionMargin are
// dead-lettered (past_retention) unless Config.MaxSampleAge says otherwise.
func WithRawRetention(d time.Duration) Option {
	return func(i *Ingester) { i.retention = d }
}

// Stats are totals since the Ingester started.
type Stats struct {
	RowsInserted uint64 // rows sent to the store and accepted (all tables); a redelivered batch counts again, the store deduplicating its rows
	DeadLetters  uint64
	DedupHits    uint64 // redelivered messages of already recorded batches
	Beaten       uint64 // batches not inserted: an older batch holds some of their messages
	// DuplicateRows are rows not stored: their content key was stored already or
	// came earlier in the same batch (dedup.go).
	DuplicateRows uint64
}

// Ingester runs one pipeline per stream (samples, jobs).
type Ingester struct {
	cfg     Config
	js      jetstream.JetStream
	sink    Sink
	log     *slog.Logger
	metrics *Metrics
	fault   func(kind, point string) error
	now     func() time.Time
	// lookup reads the identity of jobs not seen since start (nil: none).
	lookup Querier
	ids    *identities
	// retention is the store's raw retention (0: not known).
	retention time.Duration

	pipes []*pipeline
}

// New returns an Ingester reading through js and writing to sink.
func New(cfg Config, js jetstream.JetStream, sink Sink, opts ...Option) (*Ingester, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	if js == nil || sink == nil {
		return nil, errors.New("ingest: JetStream and a sink are required")
	}
	in := &Ingester{cfg: cfg, js: js, sink: sink, log: slog.New(slog.DiscardHandler), now: time.Now}
	if q, ok := sink.(Querier); ok {
		in.lookup = q
	}
	for _, o := range opts {
		o(in)
	}
	if in.metrics == nil {
		in.metrics = NewMetrics(nil)
	}
	in.log = in.log.With("component", "ingest")
	return in, nil
}

// setup creates (or finds) the durable consumers and the intent bucket.
func (in *Ingester) setup(ctx context.Context) error {
	// The intents are replicated as the samples they cover are: on a JetStream
	// cluster an R1 bucket would stop ingest whenever its one server is down.
	replicas := 1
	if st, err := in.js.Stream(ctx, bus.StreamSamples); err == nil {
		replicas = max(st.CachedInfo().Config.Replicas, 1)
	}
	kv, err := in.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      in.cfg.IntentBucket,
		Description: "gpupool ingest: stream sequences of each batch being inserted",
		TTL:         in.cfg.IntentTTL,
		Storage:     jetstream.FileStorage,
		History:     1,
		Replicas:    replicas,
	})
	if err != nil {
		return fmt.Errorf("ingest: intent bucket %s: %w", in.cfg.IntentBucket, err)
	}
	// One cache of job identities for the jobs pipeline's batches (and its
	// recoveries), kept across consumer restarts.
	if in.ids == nil {
		in.ids = newIdentities(in.lookup, identityCacheJobs)
	}
	ids := in.ids
	horizon := in.horizon()
	// A batch recovered from the stream holds messages accepted when its intent
	// was recorded: it is inserted again as it was, without checking them again.
	// It is not checked against the content keys either: its rows were kept
	// when it was gathered, and a repeat elsewhere is only a repeat.
	specs := []struct {
		kind, stream, schema string
		newRows, recoverRows func(sinkOptions) rowSink
	}{
		{"samples", bus.StreamSamples, schemas.SchemaSamples,
			func(o sinkOptions) rowSink { return newSampleSink(o, true) },
			func(o sinkOptions) rowSink { return newSampleSink(o, false) }},
		{"jobs", bus.StreamJobs, schemas.SchemaJobs,
			func(o sinkOptions) rowSink { return newJobSink(o, ids) },
			func(o sinkOptions) rowSink { return newJobSink(o, nil) }},
	}
	in.pipes = nil
	for _, s := range specs {
		p := &pipeline{}
		p.recent = newRecentKeys(in.cfg.DedupRows)
		opts := sinkOptions{maxSkew: in.cfg.MaxFutureSkew, horizon: horizon, recent: p.recent, onDup: p.countDup}
		recoverOpts := sinkOptions{maxSkew: in.cfg.MaxFutureSkew}
		if s.kind == "jobs" {
			opts.horizon = 0 // job_events have no TTL
		} else {
			opts.energy = newEnergyMemory(energyGPUs)
		}
		durable := in.cfg.Durable + "-" + s.kind
		intents := &intentStore{kv: kv, stream: s.stream, pruneDelay: 2 * in.cfg.AckWait}
		consumer := func(ctx context.Context) (jetstream.Consumer, error) {
			return in.consumer(ctx, s.stream, durable, s.kind, intents)
		}
		cons, err := consumer(ctx)
		if err != nil {
			return err
		}
		newRows, recoverRows := s.newRows, s.recoverRows
		*p = pipeline{
			kind:        s.kind,
			stream:      s.stream,
			durable:     durable,
			schema:      s.schema,
			cfg:         in.cfg,
			js:          in.js,
			cons:        cons,
			recreate:    consumer,
			sink:        in.sink,
			newRows:     func() rowSink { return newRows(opts) },
			recoverRows: func() rowSink { return recoverRows(recoverOpts) },
			cur:         newBatch(newRows(opts)),
			spare:       newBatch(newRows(opts)),
			intents:     intents,
			metrics:     in.metrics,
			log:         in.log.With("stream", s.stream),
			fault:       in.fault,
			now:         in.now,
			recent:      p.recent,
		}
		in.pipes = append(in.pipes, p)
	}
	return nil
}

// consumer creates the durable consumer on stream, or updates the one there. An
// existing consumer keeps where it delivers from. A missing one (never made, or
// lost with servers that kept no state) starts after the ack floor ingest last
// recorded for the stream, so that what was stored and acknowledged before is not
// delivered as new; with no record it starts at the stream's first message.
func (in *Ingester) consumer(ctx context.Context, stream, durable, kind string, intents *intentStore) (jetstream.Consumer, error) {
	cfg := jetstream.ConsumerConfig{
		Durable:       durable,
		Description:   "gpupool ingest (" + kind + ")",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       in.cfg.AckWait,
		MaxAckPending: in.cfg.MaxAckPending,
		MaxDeliver:    -1,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	}
	if old, err := in.js.Consumer(ctx, stream, durable); err == nil {
		cfg.DeliverPolicy, cfg.OptStartSeq = old.CachedInfo().Config.DeliverPolicy, old.CachedInfo().Config.OptStartSeq
	} else if !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, fmt.Errorf("ingest: consumer %s on %s: %w", durable, stream, err)
	} else if floor, ok, ferr := intents.recordedFloor(ctx); ferr != nil {
		return nil, fmt.Errorf("ingest: consumer %s on %s: %w", durable, stream, ferr)
	} else if ok {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, floor+1
		in.log.Warn("consumer missing; making it again after the recorded ack floor", "consumer", durable, "stream", stream, "start_seq", floor+1)
	}
	c, err := in.js.CreateOrUpdateConsumer(ctx, stream, cfg)
	if err != nil {
		return nil, fmt.Errorf("ingest: consumer on %s: %w", stream, err)
	}
	return c, nil
}

// Run consumes until ctx ends. On a normal stop it flushes what it has gathered; an
// injected fault (WithFault) returns an error wrapping the fault instead.
func (in *Ingester) Run(ctx context.Context) error {
	// NATS may not be up yet (or be restarting): keep trying, as a collector does.
	for attempt, backoff := 1, 200*time.Millisecond; ; attempt++ {
		err := in.setup(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil // stopped while starting
		}
		if attempt == 1 || attempt%10 == 0 {
			in.log.Warn("cannot set up consumers yet, retrying", "attempt", attempt, "err", err)
		}
		if !sleep(ctx, backoff) {
			return nil
		}
		backoff = min(backoff*2, 5*time.Second)
	}
	in.log.Info("ingest running", "durable", in.cfg.Durable, "batch_rows", in.cfg.BatchRows, "batch_age", in.cfg.BatchAge,
		"max_future_skew", in.cfg.MaxFutureSkew, "max_sample_age", in.horizon(), "dedup_rows", in.cfg.DedupRows)
	g, gctx := errgroup.WithContext(ctx)
	for _, p := range in.pipes {
		g.Go(func() error { return p.run(gctx) })
	}
	return g.Wait()
}

// Stats returns totals since start.
func (in *Ingester) Stats() Stats {
	var s Stats
	for _, p := range in.pipes {
		s.RowsInserted += p.rowsInserted.Load()
		s.DeadLetters += p.deadLettered.Load()
		s.DedupHits += p.dedupHits.Load()
		s.Beaten += p.beaten.Load()
		s.DuplicateRows += p.duplicates.Load()
	}
	return s
}

// horizon is how old a sample may be (0: any): Config.MaxSampleAge, else the raw
// retention less RetentionMargin.
func (in *Ingester) horizon() time.Duration {
	if in.cfg.MaxSampleAge > 0 {
		return in.cfg.MaxSampleAge
	}
	if in.retention > RetentionMargin {
		return in.retention - RetentionMargin
	}
	return 0
}

// Backlog reports, per stream kind, the messages ingest has not settled: those
// not yet delivered plus those delivered and not yet acknowledged, and never
// fewer than the stream's messages past the consumer's ack floor (a consumer
// created a moment ago may report nothing pending yet, while every message is
// still to come). All zero means ingest has caught up with what was published
// before the call.
func Backlog(ctx context.Context, js jetstream.JetStream, durable string) (map[string]uint64, error) {
	out := map[string]uint64{}
	for kind, stream := range map[string]string{"samples": bus.StreamSamples, "jobs": bus.StreamJobs} {
		st, err := js.Stream(ctx, stream)
		if err != nil {
			return nil, fmt.Errorf("ingest: stream %s: %w", stream, err)
		}
		c, err := js.Consumer(ctx, stream, durable+"-"+kind)
		if err != nil {
			return nil, fmt.Errorf("ingest: consumer %s-%s: %w", durable, kind, err)
		}
		info, err := c.Info(ctx)
		if err != nil {
			return nil, fmt.Errorf("ingest: consumer %s-%s: %w", durable, kind, err)
		}
		out[kind] = max(info.NumPending+uint64(info.NumAckPending), unsettled(st.CachedInfo().State, info.AckFloor.Stream))
	}
	return out, nil
}

// unsettled is how many of a stream's sequences lie past ackFloor (those
// removed by its limits before the floor reached them not counted).
func unsettled(st jetstream.StreamState, ackFloor uint64) uint64 {
	floor := ackFloor
	if st.FirstSeq > 0 {
		floor = max(floor, st.FirstSeq-1)
	}
	if st.LastSeq <= floor {
		return 0
	}
	return st.LastSeq - floor
}
