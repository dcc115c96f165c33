package collector

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/gpupool/gpupool/internal/bus"
	"github.com/gpupool/gpupool/schemas"
)

// Config configures one node's collector.
type Config struct {
	// Cluster and Node name where the samples come from.
	Cluster string `yaml:"cluster"`
	Node    string `yaml:"node"`
	// Interval is the sampling period of Run.
	Interval time.Duration `yaml:"interval"`
	// PublishTimeout bounds one publish attempt.
	PublishTimeout time.Duration `yaml:"publish_timeout"`
	// MaxBackoff caps the wait between publish retries.
	MaxBackoff time.Duration `yaml:"max_backoff"`
}

// DefaultConfig returns the collector defaults (1 s sampling, as DCGM profiling
// fields are useful at that resolution and cheap to read).
func DefaultConfig() Config {
	return Config{Cluster: "default", Interval: time.Second, PublishTimeout: 5 * time.Second, MaxBackoff: 10 * time.Second}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	switch {
	case c.Cluster == "":
		return errors.New("cluster: empty")
	case c.Node == "":
		return errors.New("node: empty (defaults to the host name)")
	case c.Interval < 10*time.Millisecond:
		return fmt.Errorf("interval: %s is below 10ms", c.Interval)
	case c.PublishTimeout <= 0:
		return fmt.Errorf("publish_timeout: %s must be positive", c.PublishTimeout)
	case c.MaxBackoff < 10*time.Millisecond:
		return fmt.Errorf("max_backoff: %s is below 10ms", c.MaxBackoff)
	}
	return nil
}

// Publisher is the part of JetStream the collector uses; jetstream.JetStream
// implements it.
type Publisher interface {
	PublishMsg(ctx context.Context, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error)
}

// Stats are totals since the collector started.
type Stats struct {
	Batches          uint64
	GPURows          uint64
	ProcessRows      uint64
	PublishErrors    uint64
	UnattributedRows uint64
}

// Collector samples one node's Source each tick and publishes the batch.
type Collector struct {
	cfg     Config
	src     Source
	pub     Publisher
	log     *slog.Logger
	metrics *Metrics
	id      string
	subject string

	seq   uint64
	batch schemas.SampleBatch
	enc   *schemas.Encoder
	buf   []byte

	batches, gpuRows, procRows, pubErrors, unattributed atomic.Uint64
}

// New returns a collector for src publishing through pub. metrics may be shared by
// several collectors; nil creates unregistered metrics.
func New(cfg Config, src Source, pub Publisher, log *slog.Logger, metrics *Metrics) (*Collector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("collector: %w", err)
	}
	if src == nil || pub == nil {
		return nil, errors.New("collector: a source and a publisher are required")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if metrics == nil {
		metrics = NewMetrics(nil)
	}
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("collector: id: %w", err)
	}
	return &Collector{
		cfg:     cfg,
		src:     src,
		pub:     pub,
		log:     log.With("component", "collector", "cluster", cfg.Cluster, "node", cfg.Node),
		metrics: metrics,
		id:      hex.EncodeToString(b[:]),
		subject: bus.SamplesSubject(cfg.Cluster, cfg.Node),
		enc:     schemas.NewEncoder(),
	}, nil
}

// ID is this collector's identity, unique per process start.
func (c *Collector) ID() string { return c.id }

// Stats returns totals since start.
func (c *Collector) Stats() Stats {
	return Stats{
		Batches: c.batches.Load(), GPURows: c.gpuRows.Load(), ProcessRows: c.procRows.Load(),
		PublishErrors: c.pubErrors.Load(), UnattributedRows: c.unattributed.Load(),
	}
}

// Run collects every Interval until ctx ends.
func (c *Collector) Run(ctx context.Context) error {
	t := time.NewTicker(c.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			if err := c.Collect(ctx, now); err != nil && ctx.Err() == nil {
				c.log.Warn("tick failed", "err", err)
			}
		}
	}
}

// Collect samples the source at time at and publishes the batch, retrying until
// JetStream acknowledges it or ctx ends. It is not safe for concurrent use.
func (c *Collector) Collect(ctx context.Context, at time.Time) error {
	start := time.Now()
	c.batch.Reset()
	if err := c.src.Sample(ctx, at, &c.batch); err != nil {
		c.metrics.sampleErrors.Inc()
		return fmt.Errorf("collector: sample: %w", err)
	}
	c.seq++
	c.batch.Cluster, c.batch.Node, c.batch.CollectorID, c.batch.Seq = c.cfg.Cluster, c.cfg.Node, c.id, c.seq
	var err error
	c.buf, err = c.enc.Encode(c.buf[:0], &c.batch)
	if err != nil {
		return fmt.Errorf("collector: encode: %w", err)
	}
	msg := &nats.Msg{Subject: c.subject, Data: c.buf, Header: nats.Header{}}
	msg.Header.Set(schemas.HeaderSchema, schemas.SchemaSamples)
	msg.Header.Set(nats.MsgIdHdr, c.id+"-"+strconv.FormatUint(c.seq, 10))
	if err := c.publish(ctx, msg); err != nil {
		return err
	}
	unattributed := 0
	for i := range c.batch.Processes {
		if c.batch.Processes[i].Job == "" {
			unattributed++
		}
	}
	c.batches.Add(1)
	c.gpuRows.Add(uint64(len(c.batch.GPUs)))
	c.procRows.Add(uint64(len(c.batch.Processes)))
	c.unattributed.Add(uint64(unattributed))
	c.metrics.batches.Inc()
	c.metrics.samples.WithLabelValues("gpu").Add(float64(len(c.batch.GPUs)))
	c.metrics.samples.WithLabelValues("process").Add(float64(len(c.batch.Processes)))
	c.metrics.unattributed.Add(float64(unattributed))
	c.metrics.batchBytes.Observe(float64(len(c.buf)))
	c.metrics.tickDuration.Observe(time.Since(start).Seconds())
	return nil
}

// publish sends msg until it is acknowledged, backing off between attempts. The
// message ID makes a repeat after a lost ack harmless.
func (c *Collector) publish(ctx context.Context, msg *nats.Msg) error {
	start := time.Now()
	backoff := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		pctx, cancel := context.WithTimeout(ctx, c.cfg.PublishTimeout)
		_, err := c.pub.PublishMsg(pctx, msg)
		cancel()
		if err == nil {
			c.metrics.publishDuration.Observe(time.Since(start).Seconds())
			return nil
		}
		c.pubErrors.Add(1)
		c.metrics.publishErrors.Inc()
		if ctx.Err() != nil {
			return fmt.Errorf("collector: publish batch %d: %w", c.seq, ctx.Err())
		}
		if attempt == 1 || attempt%10 == 0 {
			c.log.Warn("publish failed, retrying", "seq", c.seq, "attempt", attempt, "backoff", backoff, "err", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("collector: publish batch %d: %w", c.seq, ctx.Err())
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, c.cfg.MaxBackoff)
	}
}
