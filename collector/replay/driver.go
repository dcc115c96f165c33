package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/collector"
	"github.com/gpupool/gpupool/schemas"
)

// DriverOption changes how a Driver is built.
type DriverOption func(*driverOptions)

type driverOptions struct {
	log     *slog.Logger
	metrics *collector.Metrics
	rec     collector.Recorder
}

// WithLogger sets the logger of the driver and its collectors (default:
// discarded).
func WithLogger(log *slog.Logger) DriverOption { return func(o *driverOptions) { o.log = log } }

// WithMetrics makes every node's collector report into m (default: unregistered
// metrics).
func WithMetrics(m *collector.Metrics) DriverOption {
	return func(o *driverOptions) { o.metrics = m }
}

// WithRecorder records every batch and job event published (collector --record).
func WithRecorder(r collector.Recorder) DriverOption { return func(o *driverOptions) { o.rec = r } }

// Driver plays a trace into NATS: per tick, each node's batch goes through that
// node's collector (created when the node first appears in the trace), and the
// tick's job events through a job publisher. Its getters are safe to call while
// Run runs.
type Driver struct {
	player  *Player
	cfg     collector.Config
	pub     collector.Publisher
	colOpts []collector.Option
	jobs    *bus.JobPublisher
	ticks   atomic.Int64
	// collectors maps cluster "\x00" node to the node's collector; Run's alone.
	collectors map[string]*nodeCollector

	mu  sync.Mutex
	all []*collector.Collector // for Published
}

// nodeCollector is one node's collector and the source it reads the node's batch
// from.
type nodeCollector struct {
	col *collector.Collector
	src *batchSource
}

// batchSource hands one prepared batch to a collector as a Source.
type batchSource struct{ b *schemas.SampleBatch }

var _ collector.Source = (*batchSource)(nil)

// Sample appends the prepared batch's rows.
func (s *batchSource) Sample(_ context.Context, _ time.Time, b *schemas.SampleBatch) error {
	if s.b != nil {
		b.GPUs = append(b.GPUs, s.b.GPUs...)
		b.Processes = append(b.Processes, s.b.Processes...)
	}
	return nil
}

// NewDriver returns a driver playing p through collectors configured as cfg (the
// driver sets Cluster and Node per node, and no spool: a replay can be run
// again), publishing through pub.
func NewDriver(p *Player, cfg collector.Config, pub collector.Publisher, opts ...DriverOption) (*Driver, error) {
	if p == nil || pub == nil {
		return nil, errors.New("replay: driver: a player and a publisher are required")
	}
	var o driverOptions
	for _, opt := range opts {
		opt(&o)
	}
	jobOpts := []bus.PublisherOption{bus.WithLogger(o.log), bus.WithBackoff(cfg.Backoff())}
	colOpts := []collector.Option{collector.WithLogger(o.log), collector.WithMetrics(o.metrics)}
	if o.rec != nil {
		jobOpts = append(jobOpts, bus.WithRecorder(o.rec))
		colOpts = append(colOpts, collector.WithRecorder(o.rec))
	}
	jobs, err := bus.NewJobPublisher(bus.JetStreamSender{JS: pub, Timeout: cfg.PublishTimeout}, bus.ProducerName("replay"), jobOpts...)
	if err != nil {
		return nil, fmt.Errorf("replay: driver: %w", err)
	}
	cfg.Spool.Dir = ""
	return &Driver{player: p, cfg: cfg, pub: pub, colOpts: colOpts, jobs: jobs, collectors: map[string]*nodeCollector{}}, nil
}

// Ticks is the number of ticks played.
func (d *Driver) Ticks() int { return int(d.ticks.Load()) }

// JobEvents is the number of the trace's job events published.
func (d *Driver) JobEvents() uint64 { return d.jobs.Published() }

// Published sums what the collectors have handed to NATS.
func (d *Driver) Published() collector.Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	var s collector.Stats
	for _, c := range d.all {
		s.Add(c.Stats())
	}
	return s
}

// Run plays until the trace ends (nil) or ctx ends (its error).
func (d *Driver) Run(ctx context.Context) error {
	for {
		tick, err := d.player.Next(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		d.ticks.Add(1)
		if err := d.jobs.Publish(ctx, tick.Jobs); err != nil {
			return fmt.Errorf("replay: %w", err)
		}
		for _, b := range tick.Batches {
			nc, err := d.collectorFor(b.Cluster, b.Node)
			if err != nil {
				return err
			}
			nc.src.b = b
			err = nc.col.Collect(ctx, tick.At)
			nc.src.b = nil
			if err != nil {
				return err
			}
		}
	}
}

func (d *Driver) collectorFor(cluster, node string) (*nodeCollector, error) {
	key := cluster + "\x00" + node
	if nc, ok := d.collectors[key]; ok {
		return nc, nil
	}
	cfg := d.cfg
	cfg.Cluster, cfg.Node = cluster, node
	nc := &nodeCollector{src: &batchSource{}}
	col, err := collector.New(cfg, nc.src, d.pub, d.colOpts...)
	if err != nil {
		return nil, err
	}
	nc.col = col
	d.collectors[key] = nc
	d.mu.Lock()
	d.all = append(d.all, col)
	d.mu.Unlock()
	return nc, nil
}
