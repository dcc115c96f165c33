package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/collector"
	"github.com/gpupool/gpupool/collector/agent"
	"github.com/gpupool/gpupool/collector/attribution"
	"github.com/gpupool/gpupool/collector/gpu"
	"github.com/gpupool/gpupool/collector/replay"
	"github.com/gpupool/gpupool/collector/sim"
	"github.com/gpupool/gpupool/schemas/trace"
)

// Daemon runs the configured source until ctx ends.
type Daemon struct {
	cfg   Config
	fleet sim.Config
	conn  *bus.Conn
	log   *slog.Logger
	reg   prometheus.Registerer
	// simSpan and simSpeed drive the sim source: a zero simSpan runs until ctx
	// ends; simAhead is how far ahead of now ingest stores samples.
	simSpan  time.Duration
	simSpeed float64
	simAhead time.Duration
	now      func() time.Time
}

// Option changes how a Daemon is built.
type Option func(*Daemon)

// WithLogger sets the logger (default: discarded).
func WithLogger(log *slog.Logger) Option { return func(s *Daemon) { s.log = log } }

// WithRegisterer registers the collectors' and the GPU sources' metrics with reg
// (default: kept, not registered).
func WithRegisterer(reg prometheus.Registerer) Option { return func(s *Daemon) { s.reg = reg } }

// WithSimulation sets the sim source's span of simulated time (0: until ctx ends),
// its speed in simulated seconds per wall second (0: as fast as possible; default
// 1, real time) and how far ahead of now ingest still stores a sample
// (ingest.max_future_skew): a simulation faster than real time is placed so that
// it ends by now, and one that would publish samples ingest refuses is refused.
func WithSimulation(span time.Duration, speed float64, maxFutureSkew time.Duration) Option {
	return func(s *Daemon) { s.simSpan, s.simSpeed, s.simAhead = span, speed, maxFutureSkew }
}

// WithClock sets the clock the simulation is placed by (default time.Now).
func WithClock(now func() time.Time) Option { return func(s *Daemon) { s.now = now } }

// New checks cfg and returns a daemon publishing through conn. fleet is the
// simulated fleet the sim source runs.
func New(cfg Config, fleet sim.Config, conn *bus.Conn, opts ...Option) (*Daemon, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("collector: %w", err)
	}
	s := &Daemon{cfg: cfg, fleet: fleet, conn: conn, log: slog.New(slog.DiscardHandler), simSpeed: 1, now: time.Now}
	for _, o := range opts {
		o(s)
	}
	if cfg.Source == SourceSim {
		if err := s.placeSimulation(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// DefaultBackfill is how much simulated history an open-ended simulation faster
// than real time starts with: it publishes that day as fast as asked, then goes on
// in real time.
const DefaultBackfill = 24 * time.Hour

// placeSimulation gives the simulation a start where what it publishes can be
// stored: in real time, now; faster with a span, ending now (so the whole span lands
// in the past); faster with no end, DefaultBackfill ago, catching up with the clock
// and then keeping to it. A configured start (sim.start) that would put samples
// past ingest's max_future_skew is refused, rather than have ingest dead-letter
// them.
func (s *Daemon) placeSimulation() error {
	now := s.now().UTC()
	realTime := s.simSpeed == 1
	if s.fleet.Start.IsZero() {
		switch {
		case realTime:
			s.fleet.Start = now.Truncate(s.fleet.Tick)
		case s.simSpan > 0:
			s.fleet.Start = now.Add(-s.simSpan).Truncate(s.fleet.Tick)
		default:
			s.fleet.Start = now.Add(-DefaultBackfill).Truncate(s.fleet.Tick)
		}
	}
	latest := s.fleet.Start
	if !realTime && s.simSpan > 0 {
		latest = s.fleet.Start.Add(s.simSpan)
	}
	if limit := now.Add(s.simAhead); s.simAhead > 0 && latest.After(limit) {
		return fmt.Errorf("collector: the simulation would publish samples up to %s, more than %s ahead of now; ingest dead-letters them (ingest.max_future_skew): start it earlier (sim.start) or shorten --duration",
			latest.Format(time.RFC3339), s.simAhead)
	}
	return nil
}

// Run samples and publishes until ctx ends (nil) or, for a trace, until it ends.
func (s *Daemon) Run(ctx context.Context) error {
	metrics := collector.NewMetrics(s.reg)
	var rec *replay.Recorder
	if s.cfg.Record != "" {
		r, err := replay.CreateRecorder(s.cfg.Record)
		if err != nil {
			return err
		}
		defer func() {
			if err := r.Close(); err != nil {
				s.log.Error("closing the recording", "file", s.cfg.Record, "err", err)
			}
		}()
		rec = r
	}
	if s.conn != nil && s.conn.NC != nil {
		// A real node hears of its own batches; sim and replay publish for many.
		subject := bus.RejectedPrefix + ".>"
		if s.cfg.RealSource() {
			subject = bus.RejectedSubject(s.cfg.Cluster, s.cfg.Node)
		}
		rej, err := collector.WatchRejections(s.conn.NC, subject, metrics, s.log)
		if err != nil {
			return err
		}
		defer rej.Stop()
	}
	var err error
	switch s.cfg.Source {
	case SourceSim:
		err = s.runSim(ctx, metrics, rec)
	case SourceReplay:
		err = s.runReplay(ctx, metrics, rec)
	default:
		err = s.runNode(ctx, metrics, rec)
	}
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// runNode collects this node's GPUs until ctx ends.
func (s *Daemon) runNode(ctx context.Context, metrics *collector.Metrics, rec *replay.Recorder) error {
	c := s.cfg
	src, kind, err := gpu.Open(gpu.Config{Source: c.Source, DCGM: c.DCGM, NVML: c.NVML}, gpu.WithLogger(s.log), gpu.WithRegisterer(s.reg))
	if err != nil {
		return err
	}
	defer src.Close()
	attr, err := attribution.New(c.Attribution, attribution.WithLogger(s.log))
	if err != nil {
		return err
	}
	opts := []collector.Option{collector.WithLogger(s.log), collector.WithMetrics(metrics), collector.WithAttributor(attr)}
	if rec != nil {
		opts = append(opts, collector.WithRecorder(rec))
	}
	col, err := collector.New(c.Config, src, s.conn.JS, opts...)
	if err != nil {
		return err
	}
	defer col.Close()
	if c.Agent.Enabled() {
		a, err := agent.New(c.Agent, s.conn.NC, col, agent.WithLogger(s.log), agent.WithAttributor(attr))
		if err != nil {
			return err
		}
		go func() {
			if err := a.Run(ctx); err != nil {
				s.log.Error("node agent stopped", "err", err)
			}
		}()
	}
	s.log.Info("collector running", "source", kind, "cluster", c.Cluster, "node", c.Node, "interval", c.Interval, "spool", c.Spool.Dir)
	return col.Run(ctx)
}

// runSim simulates the fleet, publishing in real time (or at the set speed).
func (s *Daemon) runSim(ctx context.Context, metrics *collector.Metrics, rec *replay.Recorder) error {
	opts := []sim.DriverOption{sim.WithLogger(s.log), sim.WithMetrics(metrics)}
	if rec != nil {
		opts = append(opts, sim.WithRecorder(rec))
	}
	// Never ahead of the clock: ingest stores nothing from the future.
	dc := sim.DriverConfig{Fleet: s.fleet, Collector: s.cfg.Config, Speed: s.simSpeed, NotAhead: true, Now: s.now}
	if s.simSpan > 0 {
		dc.End = s.fleet.Start.Add(s.simSpan)
	}
	d, err := sim.NewDriver(dc, s.conn.JS, opts...)
	if err != nil {
		return err
	}
	s.log.Info("simulated fleet publishing", "nodes", d.Nodes(), "gpus", d.GPUCount(), "tick", s.fleet.Tick, "speed", dc.Speed)
	err = d.Run(ctx)
	pub := d.Published()
	s.log.Info("collector stopped", "batches", pub.Batches, "gpu_rows", pub.GPURows, "process_rows", pub.ProcessRows, "job_events", d.JobEvents())
	return err
}

// runReplay plays the trace through one collector per node it names.
func (s *Daemon) runReplay(ctx context.Context, metrics *collector.Metrics, rec *replay.Recorder) error {
	t := s.cfg.Trace
	f, err := os.Open(t.File)
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	defer f.Close()
	r := trace.NewReader(f, trace.ReaderOptions{Strict: t.Strict})
	p, err := replay.New(r, replay.Config{Speed: t.Speed})
	if err != nil {
		return err
	}
	opts := []replay.DriverOption{replay.WithLogger(s.log), replay.WithMetrics(metrics)}
	if rec != nil {
		opts = append(opts, replay.WithRecorder(rec))
	}
	d, err := replay.NewDriver(p, s.cfg.Config, s.conn.JS, opts...)
	if err != nil {
		return err
	}
	err = d.Run(ctx)
	for _, le := range p.Errors() {
		s.log.Warn("bad trace line", "file", t.File, "line", le.Line, "reason", le.Reason)
	}
	s.log.Info("replay finished", "file", t.File, "ticks", d.Ticks(), "batches", d.Published().Batches,
		"job_events", d.JobEvents(), "bad_lines", r.Skipped(), "late_records", p.Stats().LateRecords,
		"duplicate_records", p.Stats().DuplicateRecords)
	return err
}
