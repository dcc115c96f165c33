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
	// simEnd and simSpeed drive the sim source: a zero simEnd runs until ctx ends.
	simEnd   time.Time
	simSpeed float64
}

// Option changes how a Daemon is built.
type Option func(*Daemon)

// WithLogger sets the logger (default: discarded).
func WithLogger(log *slog.Logger) Option { return func(s *Daemon) { s.log = log } }

// WithRegisterer registers the collectors' and the GPU sources' metrics with reg
// (default: kept, not registered).
func WithRegisterer(reg prometheus.Registerer) Option { return func(s *Daemon) { s.reg = reg } }

// WithSimulation sets the sim source's end (zero: until ctx ends) and its speed in
// simulated seconds per wall second (0: as fast as possible; default 1).
func WithSimulation(end time.Time, speed float64) Option {
	return func(s *Daemon) { s.simEnd, s.simSpeed = end, speed }
}

// New checks cfg and returns a daemon publishing through conn. fleet is the
// simulated fleet the sim source runs.
func New(cfg Config, fleet sim.Config, conn *bus.Conn, opts ...Option) (*Daemon, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("collector: %w", err)
	}
	s := &Daemon{cfg: cfg, fleet: fleet, conn: conn, log: slog.New(slog.DiscardHandler), simSpeed: 1}
	for _, o := range opts {
		o(s)
	}
	return s, nil
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
	attr, err := attribution.New(c.Attribution)
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
		a, err := agent.New(c.Agent, s.conn.NC, col, agent.WithLogger(s.log))
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
	dc := sim.DriverConfig{Fleet: s.fleet, Collector: s.cfg.Config, End: s.simEnd, Speed: s.simSpeed}
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
		"job_events", d.JobEvents(), "bad_lines", r.Skipped(), "late_records", p.Stats().LateRecords)
	return err
}
