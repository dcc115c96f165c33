package collector

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/collector/spool"
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
	// Spool is the on-disk buffer used while NATS is unreachable; an empty dir
	// means no spool (publishing blocks until NATS answers).
	Spool spool.Config `yaml:"spool"`
	// JobEndAfter ends an attributed job once none of its processes has been seen
	// on this node for this long.
	JobEndAfter time.Duration `yaml:"job_end_after"`
	// CgroupRoot is where the cgroup v2 hierarchy is mounted; the collector reads
	// each attributed job's memory.events below it for OOM kills. Empty: not read.
	CgroupRoot string `yaml:"cgroup_root"`
	// Output scrapes the Prometheus counters jobs name as their output.
	Output OutputConfig `yaml:"output"`
}

// DefaultConfig returns the collector defaults (1 s sampling, as DCGM profiling
// fields are useful at that resolution and cheap to read).
func DefaultConfig() Config {
	return Config{
		Cluster: "default", Interval: time.Second, PublishTimeout: 5 * time.Second, MaxBackoff: 10 * time.Second,
		Spool:       spool.Config{MaxBytes: 1 << 30},
		JobEndAfter: 2 * time.Minute,
		CgroupRoot:  "/sys/fs/cgroup",
		Output:      OutputConfig{Interval: 30 * time.Second, Timeout: 5 * time.Second, ReportEvery: 5 * time.Minute},
	}
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
	case c.JobEndAfter < c.Interval:
		return fmt.Errorf("job_end_after: %s is shorter than interval (%s)", c.JobEndAfter, c.Interval)
	}
	if err := c.Output.validate(); err != nil {
		return err
	}
	// Every sample carries them, and ingest refuses batches whose cluster or
	// node breaks the identifier rules: refuse them here, before any is sent.
	if err := schemas.CheckName("cluster", c.Cluster); err != nil {
		return identErr(err)
	}
	if err := schemas.CheckKey("node", c.Node); err != nil {
		return identErr(err)
	}
	if c.Spool.Dir != "" {
		if err := c.Spool.Validate(); err != nil {
			return fmt.Errorf("spool.%w", err)
		}
	}
	return nil
}

// Backoff is the retry policy of the collector's publishes: 50 ms after the first
// failure (or MaxBackoff, if shorter), doubling up to MaxBackoff.
func (c Config) Backoff() bus.Backoff {
	return bus.Backoff{Initial: min(50*time.Millisecond, c.MaxBackoff), Max: c.MaxBackoff}
}

// Publisher is the part of JetStream the collector uses; jetstream.JetStream
// implements it.
type Publisher interface {
	PublishMsg(ctx context.Context, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error)
}

// Stats are totals since the collector started. Batches and rows count what was
// handed to NATS or, while NATS was unreachable, to the spool.
type Stats struct {
	Batches          uint64
	GPURows          uint64
	ProcessRows      uint64
	PublishErrors    uint64
	UnattributedRows uint64
	JobEvents        uint64
	// Spooled counts messages written to the spool; SpoolDropped those the spool
	// dropped to stay within its bound (lost).
	Spooled      uint64
	SpoolDropped uint64
	// SpoolPending is what waits in the spool now.
	SpoolPending uint64
}

// Add adds o's totals to s (a process running several collectors reports their
// sum).
func (s *Stats) Add(o Stats) {
	s.Batches += o.Batches
	s.GPURows += o.GPURows
	s.ProcessRows += o.ProcessRows
	s.PublishErrors += o.PublishErrors
	s.UnattributedRows += o.UnattributedRows
	s.JobEvents += o.JobEvents
	s.Spooled += o.Spooled
	s.SpoolDropped += o.SpoolDropped
	s.SpoolPending += o.SpoolPending
}

// Recorder keeps a copy of what the collector saw (collector --record).
type Recorder interface {
	RecordBatch(b *schemas.SampleBatch) error
	RecordJobs(events []schemas.JobEvent) error
}

// Option changes how a Collector is built.
type Option func(*Collector)

// WithLogger sets the collector's logger (default: discarded).
func WithLogger(log *slog.Logger) Option {
	return func(c *Collector) {
		if log != nil {
			c.log = log
		}
	}
}

// WithMetrics makes the collector report into m, which several collectors may
// share (default: unregistered metrics).
func WithMetrics(m *Metrics) Option {
	return func(c *Collector) {
		if m != nil {
			c.metrics = m
		}
	}
}

// WithAttributor attributes processes the source left unattributed to jobs.
func WithAttributor(a Attributor) Option { return func(c *Collector) { c.attr = a } }

// WithRecorder records every batch and job event.
func WithRecorder(r Recorder) Option { return func(c *Collector) { c.rec = r } }

// Collector samples one node's Source each tick and publishes the batch.
type Collector struct {
	cfg     Config
	src     Source
	pub     Publisher
	log     *slog.Logger
	metrics *Metrics
	id      string
	subject string

	attr    Attributor
	rec     Recorder
	backoff bus.Backoff
	out     *outbox
	spool   *spool.Spool
	jobs    *jobTracker
	jobPub  *bus.JobPublisher
	seq     uint64
	batch   schemas.SampleBatch
	enc     *schemas.Encoder
	buf     []byte

	pidMu sync.Mutex
	pids  map[uint32]string // GPU processes of the last sample → job key

	batches, gpuRows, procRows, unattributed atomic.Uint64
}

// New returns a collector for src publishing through pub.
func New(cfg Config, src Source, pub Publisher, opts ...Option) (*Collector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("collector: %w", err)
	}
	if src == nil || pub == nil {
		return nil, errors.New("collector: a source and a publisher are required")
	}
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("collector: id: %w", err)
	}
	c := &Collector{
		cfg:     cfg,
		src:     src,
		pub:     pub,
		log:     slog.New(slog.DiscardHandler),
		backoff: cfg.Backoff(),
		id:      hex.EncodeToString(b[:]),
		subject: bus.SamplesSubject(cfg.Cluster, cfg.Node),
		enc:     schemas.NewEncoder(),
		jobs:    newJobTracker(cfg.Cluster, cfg.Node, cfg.JobEndAfter),
		pids:    map[uint32]string{},
	}
	for _, o := range opts {
		o(c)
	}
	if c.metrics == nil {
		c.metrics = NewMetrics(nil)
	}
	c.log = c.log.With("component", "collector", "cluster", cfg.Cluster, "node", cfg.Node)
	c.jobs.cgroupRoot, c.jobs.log, c.jobs.metrics, c.jobs.reportEvery = cfg.CgroupRoot, c.log, c.metrics, cfg.Output.ReportEvery
	if er, ok := c.attr.(EndReasoner); ok {
		c.jobs.endReasoner = er
	}
	if cfg.Output.Interval > 0 {
		c.jobs.output = newOutputScraper(cfg.Output, c.log, c.metrics)
	}
	if cfg.Spool.Dir != "" {
		sp, err := spool.Open(cfg.Spool, spool.WithLogger(c.log))
		if err != nil {
			return nil, fmt.Errorf("collector: %w", err)
		}
		c.spool = sp
		if n := sp.Len(); n > 0 {
			c.log.Info("spool holds messages from before the restart; they go first", "records", n)
		}
	}
	c.out = newOutbox(pub, c.spool, cfg.PublishTimeout, c.backoff, c.log, c.metrics)
	jobOpts := []bus.PublisherOption{bus.WithLogger(c.log), bus.WithBackoff(c.backoff)}
	if c.rec != nil {
		jobOpts = append(jobOpts, bus.WithRecorder(c.rec))
	}
	jp, err := bus.NewJobPublisher(c.out, "collector-"+c.id, jobOpts...)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("collector: %w", err), c.Close())
	}
	c.jobPub = jp
	return c, nil
}

func (c *Collector) spoolLen() uint64 {
	if c.spool == nil {
		return 0
	}
	return c.spool.Len()
}

// Close releases the spool (its contents stay on disk for the next start).
func (c *Collector) Close() error {
	if c.spool != nil {
		return c.spool.Close()
	}
	return nil
}

// GPUProcesses returns the PIDs holding a GPU in the last sample, with their job
// keys: the only processes the node agent may signal.
func (c *Collector) GPUProcesses() map[uint32]string {
	c.pidMu.Lock()
	defer c.pidMu.Unlock()
	out := make(map[uint32]string, len(c.pids))
	for k, v := range c.pids {
		out[k] = v
	}
	return out
}

// ID is this collector's identity, unique per process start.
func (c *Collector) ID() string { return c.id }

// Stats returns totals since start.
func (c *Collector) Stats() Stats {
	return Stats{
		Batches: c.batches.Load(), GPURows: c.gpuRows.Load(), ProcessRows: c.procRows.Load(),
		PublishErrors: c.out.errors.Load(), UnattributedRows: c.unattributed.Load(), JobEvents: c.jobPub.Published(),
		Spooled: c.out.spooled.Load(), SpoolDropped: c.out.dropped.Load(), SpoolPending: c.spoolLen(),
	}
}

// Run collects every Interval until ctx ends, and drains the spool meanwhile.
func (c *Collector) Run(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.out.drain(ctx)
	}()
	defer func() { <-done }()
	if c.jobs.output != nil {
		scraped := make(chan struct{})
		go func() {
			defer close(scraped)
			c.jobs.output.run(ctx)
		}()
		defer func() { <-scraped }()
	}
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

// Collect samples the source at time at, attributes its processes, and hands the
// batch (and any job events) to NATS — or to the spool while NATS is unreachable. It
// is not safe for concurrent use.
func (c *Collector) Collect(ctx context.Context, at time.Time) error {
	start := time.Now()
	c.batch.Reset()
	if err := c.src.Sample(ctx, at, &c.batch); err != nil {
		c.metrics.sampleErrors.Inc()
		return fmt.Errorf("collector: sample: %w", err)
	}
	c.seq++
	c.batch.Cluster, c.batch.Node, c.batch.CollectorID, c.batch.Seq = c.cfg.Cluster, c.cfg.Node, c.id, c.seq
	unattributed := c.attribute(ctx, at)
	c.jobs.observeGPUs(c.batch.GPUs)
	c.jobs.readCgroups()
	var err error
	c.buf, err = c.enc.Encode(c.buf[:0], &c.batch)
	if err != nil {
		return fmt.Errorf("collector: encode: %w", err)
	}
	msg := &nats.Msg{Subject: c.subject, Data: c.buf, Header: nats.Header{}}
	msg.Header.Set(schemas.HeaderSchema, schemas.SchemaSamples)
	msg.Header.Set(nats.MsgIdHdr, c.id+"-"+strconv.FormatUint(c.seq, 10))
	if err := c.deliver(ctx, msg); err != nil {
		return err
	}
	if c.rec != nil {
		if err := c.rec.RecordBatch(&c.batch); err != nil {
			c.log.Warn("record batch", "err", err)
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
	if err := c.jobPub.Publish(ctx, c.jobs.events(ctx, at.UnixMilli())); err != nil {
		return fmt.Errorf("collector: %w", err)
	}
	c.metrics.tickDuration.Observe(time.Since(start).Seconds())
	return nil
}

// attribute fills the job of processes the source left unattributed, tracks jobs
// for job events, and remembers the tick's GPU processes for the node agent. It
// returns the number of processes still unattributed.
func (c *Collector) attribute(ctx context.Context, at time.Time) int {
	unattributed := 0
	c.pidMu.Lock()
	defer c.pidMu.Unlock()
	clear(c.pids)
	for i := range c.batch.Processes {
		p := &c.batch.Processes[i]
		if p.Job == "" && c.attr != nil {
			info, err := c.attr.Attribute(ctx, p.PID)
			if err != nil {
				c.metrics.attributionErrors.Inc()
			} else if info.Job != "" {
				p.Job = info.Job
				c.jobs.observe(info, p.GPUUUID, at.UnixMilli())
			}
		}
		if p.Job == "" {
			unattributed++
		}
		c.pids[p.PID] = p.Job
	}
	return unattributed
}

// deliver hands msg to the outbox under the retry policy: without a spool it
// blocks until NATS acknowledges or ctx ends.
func (c *Collector) deliver(ctx context.Context, msg *nats.Msg) error {
	err := c.backoff.Retry(ctx, func(ctx context.Context) error { return c.out.Send(ctx, msg) },
		func(n int, wait time.Duration, err error) {
			if n == 1 || n%10 == 0 {
				c.log.Warn("publish failed, retrying", "subject", msg.Subject, "attempt", n, "backoff", wait, "err", err)
			}
		})
	if err != nil {
		return fmt.Errorf("collector: publish %s: %w", msg.Subject, err)
	}
	return nil
}

// identErr is an identifier error as a configuration error: the key first.
func identErr(err error) error {
	return errors.New(strings.TrimPrefix(err.Error(), schemas.ErrInvalidIdentifier.Error()+": "))
}
