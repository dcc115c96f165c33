package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/collector"
)

// DriverConfig says what a Driver runs and how fast.
type DriverConfig struct {
	// Fleet is the simulated fleet; it starts at Fleet.Start and advances by
	// Fleet.Tick.
	Fleet Config
	// Collector configures each node's collector; the driver sets Cluster and
	// Node per node.
	Collector collector.Config
	// End is the simulated time to stop at (zero: run until ctx ends).
	End time.Time
	// Speed is simulated seconds per wall-clock second; 0 runs as fast as
	// possible.
	Speed float64
	// NotAhead never lets simulated time pass the wall clock: a fast run that
	// reaches now goes on in real time, so every sample it publishes is one ingest
	// stores (it refuses samples from the future).
	NotAhead bool
	// Now is the wall clock NotAhead compares with (default time.Now).
	Now func() time.Time
}

// Validate checks the driver's own settings (the fleet's and the collectors' are
// checked when they are built).
func (c DriverConfig) Validate() error {
	switch {
	case c.Speed < 0:
		return fmt.Errorf("speed: %g is negative", c.Speed)
	case !c.End.IsZero() && c.End.Before(c.Fleet.Start):
		return fmt.Errorf("end: %s is before the fleet's start (%s)", c.End.Format(time.RFC3339), c.Fleet.Start.Format(time.RFC3339))
	}
	return nil
}

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

// Driver runs a simulated fleet on an accelerated clock: each tick it advances the
// fleet, publishes the job events the fleet's scheduler produced, and runs one
// collector per simulated node. Its getters are safe to call while Run runs.
type Driver struct {
	cfg        DriverConfig
	fleet      *Fleet // Run's alone
	collectors []*collector.Collector
	jobs       *bus.JobPublisher
	gpus       int
	onTick     func(now time.Time)

	nowMs atomic.Int64
	// stats is the fleet's Stats after the last tick.
	stats atomic.Pointer[Stats]
}

// NewDriver builds the fleet and a collector per node, publishing through pub.
func NewDriver(cfg DriverConfig, pub collector.Publisher, opts ...DriverOption) (*Driver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("sim: driver: %w", err)
	}
	if pub == nil {
		return nil, errors.New("sim: driver: a publisher is required")
	}
	var o driverOptions
	for _, opt := range opts {
		opt(&o)
	}
	fleet, err := New(cfg.Fleet)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	jobOpts := []bus.PublisherOption{bus.WithLogger(o.log), bus.WithBackoff(cfg.Collector.Backoff())}
	colOpts := []collector.Option{collector.WithLogger(o.log), collector.WithMetrics(o.metrics)}
	if o.rec != nil {
		jobOpts = append(jobOpts, bus.WithRecorder(o.rec))
		colOpts = append(colOpts, collector.WithRecorder(o.rec))
	}
	jobs, err := bus.NewJobPublisher(bus.JetStreamSender{JS: pub, Timeout: cfg.Collector.PublishTimeout}, bus.ProducerName("sim"), jobOpts...)
	if err != nil {
		return nil, fmt.Errorf("sim: driver: %w", err)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	d := &Driver{cfg: cfg, fleet: fleet, jobs: jobs, gpus: fleet.GPUCount()}
	d.nowMs.Store(cfg.Fleet.Start.UnixMilli())
	for _, n := range fleet.Nodes() {
		c := cfg.Collector
		c.Cluster, c.Node = n.Cluster(), n.Name()
		col, err := collector.New(c, n, pub, colOpts...)
		if err != nil {
			return nil, err
		}
		d.collectors = append(d.collectors, col)
	}
	return d, nil
}

// OnTick makes Run call fn after each tick, with the simulated time reached. Call
// it before Run.
func (d *Driver) OnTick(fn func(now time.Time)) { d.onTick = fn }

// Fleet is the simulated fleet, for an executor acting on it (scheduler/executor/sim).
// Touch it only from the OnTick function: that runs in Run's goroutine, between
// ticks, when no collector is sampling.
func (d *Driver) Fleet() *Fleet { return d.fleet }

// Start is the simulated time the run starts at.
func (d *Driver) Start() time.Time { return d.cfg.Fleet.Start }

// End is the simulated time the run stops at (zero: when ctx ends).
func (d *Driver) End() time.Time { return d.cfg.End }

// Now is the simulated time reached.
func (d *Driver) Now() time.Time { return time.UnixMilli(d.nowMs.Load()).UTC() }

// Nodes is the number of simulated nodes, each with its collector.
func (d *Driver) Nodes() int { return len(d.collectors) }

// GPUCount is the number of GPU units (whole GPUs and MIG slices) of the fleet.
func (d *Driver) GPUCount() int { return d.gpus }

// FleetStats is the fleet's job and allocation counts after the last tick.
func (d *Driver) FleetStats() Stats {
	if s := d.stats.Load(); s != nil {
		return *s
	}
	return Stats{}
}

// Published sums what the collectors have handed to NATS.
func (d *Driver) Published() collector.Stats {
	var s collector.Stats
	for _, c := range d.collectors {
		s.Add(c.Stats())
	}
	return s
}

// JobEvents is the number of the fleet's job events published.
func (d *Driver) JobEvents() uint64 { return d.jobs.Published() }

// Run drives the fleet from Start to End (or until ctx ends, whose error it then
// returns). Call it once.
func (d *Driver) Run(ctx context.Context) error {
	wallStart := time.Now()
	workers := max(2, runtime.GOMAXPROCS(0)*2)
	start, tick := d.cfg.Fleet.Start, d.cfg.Fleet.Tick
	for t := start; d.cfg.End.IsZero() || t.Before(d.cfg.End); t = t.Add(tick) {
		if err := ctx.Err(); err != nil {
			return err
		}
		var wait time.Duration
		if d.cfg.Speed > 0 {
			wait = time.Until(wallStart.Add(time.Duration(float64(t.Sub(start)) / d.cfg.Speed)))
		}
		if d.cfg.NotAhead {
			wait = max(wait, t.Sub(d.cfg.Now()))
		}
		if wait > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(wait):
			}
		}
		events := d.fleet.Advance(t)
		st := d.fleet.Stats()
		d.stats.Store(&st)
		if err := d.jobs.Publish(ctx, events); err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(workers)
		for _, c := range d.collectors {
			g.Go(func() error { return c.Collect(gctx, t) })
		}
		if err := g.Wait(); err != nil {
			return err
		}
		d.nowMs.Store(t.Add(tick).UnixMilli())
		if d.onTick != nil {
			d.onTick(t.Add(tick))
		}
	}
	return nil
}
