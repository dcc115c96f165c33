package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/gpupool/gpupool/collector"
	"github.com/gpupool/gpupool/collector/agent"
	"github.com/gpupool/gpupool/collector/attribution"
	"github.com/gpupool/gpupool/collector/gpu"
	"github.com/gpupool/gpupool/collector/replay"
	"github.com/gpupool/gpupool/collector/sim"
	"github.com/gpupool/gpupool/internal/config"
	"github.com/gpupool/gpupool/schemas/trace"
	"github.com/prometheus/client_golang/prometheus"
)

// CollectorCmd samples GPUs and publishes them. On a GPU node the source is DCGM or
// NVML (auto picks); sim simulates a whole fleet and replay plays a trace, both as
// load generators for a real pipeline.
type CollectorCmd struct {
	Source      string        `help:"Where samples come from: auto (DCGM, else NVML), dcgm, nvml, sim or replay." enum:",auto,dcgm,nvml,sim,replay" default:""`
	Trace       string        `help:"Trace file to replay (JSON Lines, optionally gzip); implies --source replay."`
	Strict      bool          `help:"Replay: stop at the first bad line instead of counting and skipping it."`
	Record      string        `help:"Also write everything the source sees to this trace file (.gz: gzipped)."`
	DCGMAddress string        `name:"dcgm-address" help:"nv-hostengine to use (host:5555) instead of embedded DCGM; lets the collector run beside dcgm-exporter."`
	Cluster     string        `help:"Cluster name (default from the configuration)."`
	Node        string        `help:"Node name (default: host name)."`
	Interval    time.Duration `help:"Sampling interval (default 1s; for sim, the simulated tick)."`
	Speed       float64       `help:"sim and replay: simulated seconds per wall second (0: as fast as possible)." default:"-1"`
	Duration    time.Duration `help:"sim: stop after this much simulated time (default: until interrupted)."`
	SpoolDir    string        `help:"Disk spool used while NATS is unreachable (default <data-dir>/spool for real sources)."`
	AgentSecret string        `name:"agent-secret-file" help:"Enable the node agent: reclaim commands signed with this shared secret are carried out."`
	Metrics     string        `help:"Address for /metrics, /healthz, /readyz (e.g. :9464); empty disables."`
}

// Run samples and publishes until interrupted (or, for replay, the trace ends).
func (cc *CollectorCmd) Run(g *Globals, ctx context.Context) error {
	c, err := g.loadConfig()
	if err != nil {
		return err
	}
	cc.apply(&c)
	if err := g.finish(&c); err != nil {
		return err
	}
	log := newLogger(c.LogLevel)
	b, err := openBus(ctx, c, "gpupool-collector", log)
	if err != nil {
		return err
	}
	defer b.Close()
	reg := newRegistry()
	if err := serveMetrics(ctx, c.MetricsListen, reg, b.ready, log); err != nil {
		return err
	}
	metrics := collector.NewMetrics(reg)
	simOpts := []sim.DriverOption{sim.WithLogger(log), sim.WithMetrics(metrics)}
	replayOpts := []replay.DriverOption{replay.WithLogger(log), replay.WithMetrics(metrics)}
	opts := []collector.Option{collector.WithLogger(log), collector.WithMetrics(metrics)}
	if c.Collector.Record != "" {
		r, closeRec, err := openRecorder(c.Collector.Record)
		if err != nil {
			return err
		}
		defer func() {
			if err := closeRec(); err != nil {
				log.Error("closing the recording", "file", c.Collector.Record, "err", err)
			}
		}()
		simOpts, replayOpts = append(simOpts, sim.WithRecorder(r)), append(replayOpts, replay.WithRecorder(r))
		opts = append(opts, collector.WithRecorder(r))
	}
	switch c.Collector.Source {
	case "sim":
		return runSim(ctx, c, cc, b, simOpts, log)
	case "replay":
		return runReplay(ctx, c, b, replayOpts, log)
	}
	return runNode(ctx, c, b, reg, opts, log)
}

// apply puts the flags over the configuration.
func (cc *CollectorCmd) apply(c *config.Config) {
	if cc.Trace != "" {
		c.Collector.Trace.File = cc.Trace
		if cc.Source == "" {
			cc.Source = "replay"
		}
	}
	if cc.Source != "" {
		c.Collector.Source = cc.Source
	}
	if cc.Strict {
		c.Collector.Trace.Strict = true
	}
	if cc.Record != "" {
		c.Collector.Record = cc.Record
	}
	if cc.DCGMAddress != "" {
		c.Collector.DCGM.Address = cc.DCGMAddress
	}
	if cc.Cluster != "" {
		c.Collector.Cluster = cc.Cluster
	}
	if cc.Node != "" {
		c.Collector.Node = cc.Node
	}
	if cc.Interval > 0 {
		c.Collector.Interval = cc.Interval
		c.Sim.Tick = cc.Interval
	}
	if cc.Speed >= 0 {
		c.Collector.Trace.Speed = cc.Speed
	}
	if cc.SpoolDir != "" {
		c.Collector.Spool.Dir = cc.SpoolDir
	}
	if cc.AgentSecret != "" {
		c.Collector.Agent.SecretFile = cc.AgentSecret
	}
	if cc.Metrics != "" {
		c.MetricsListen = cc.Metrics
	}
	if c.Sim.Start.IsZero() {
		c.Sim.Start = time.Now().UTC().Truncate(c.Sim.Tick)
	}
}

// openRecorder opens a trace file for --record.
func openRecorder(path string) (*replay.Recorder, func() error, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, fmt.Errorf("record: %w", err)
	}
	rec := replay.NewRecorder(trace.NewWriter(f, strings.HasSuffix(path, ".gz")))
	return rec, func() error { return errors.Join(rec.Close(), f.Close()) }, nil
}

// runNode collects this node's GPUs until interrupted.
func runNode(ctx context.Context, c config.Config, b *busConn, reg prometheus.Registerer, opts []collector.Option, log *slog.Logger) error {
	src, kind, err := gpu.Open(gpu.Config{Source: c.Collector.Source, DCGM: c.Collector.DCGM, NVML: c.Collector.NVML},
		gpu.WithLogger(log), gpu.WithRegisterer(reg))
	if err != nil {
		return err
	}
	defer src.Close()
	attr, err := attribution.New(c.Collector.Attribution)
	if err != nil {
		return err
	}
	opts = append(opts, collector.WithAttributor(attr))
	col, err := collector.New(c.Collector.Config, src, b.js, opts...)
	if err != nil {
		return err
	}
	defer col.Close()
	if c.Collector.Agent.SecretFile != "" {
		a, err := agent.New(c.Collector.Agent, b.nc, col, agent.WithLogger(log))
		if err != nil {
			return err
		}
		go func() {
			if err := a.Run(ctx); err != nil {
				log.Error("node agent stopped", "err", err)
			}
		}()
	}
	log.Info("collector running", "source", kind, "cluster", c.Collector.Cluster, "node", c.Collector.Node,
		"interval", c.Collector.Interval, "spool", c.Collector.Spool.Dir)
	return col.Run(ctx)
}

// runSim simulates the configured fleet, publishing in real time (or --speed).
func runSim(ctx context.Context, c config.Config, cc *CollectorCmd, b *busConn, opts []sim.DriverOption, log *slog.Logger) error {
	dc := sim.DriverConfig{Fleet: c.Sim, Collector: c.Collector.Config, Speed: 1}
	if cc.Duration > 0 {
		dc.End = c.Sim.Start.Add(cc.Duration)
	}
	if cc.Speed >= 0 {
		dc.Speed = cc.Speed
	}
	d, err := sim.NewDriver(dc, b.js, opts...)
	if err != nil {
		return err
	}
	log.Info("simulated fleet publishing", "nodes", d.Nodes(), "gpus", d.GPUCount(), "tick", c.Sim.Tick, "speed", dc.Speed)
	err = d.Run(ctx)
	pub := d.Published()
	log.Info("collector stopped", "batches", pub.Batches, "gpu_rows", pub.GPURows, "process_rows", pub.ProcessRows, "job_events", d.JobEvents())
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// runReplay plays the trace through one collector per node it names.
func runReplay(ctx context.Context, c config.Config, b *busConn, opts []replay.DriverOption, log *slog.Logger) error {
	f, err := os.Open(c.Collector.Trace.File)
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	defer f.Close()
	r := trace.NewReader(f, trace.ReaderOptions{Strict: c.Collector.Trace.Strict})
	p, err := replay.New(r, replay.Config{Speed: c.Collector.Trace.Speed})
	if err != nil {
		return err
	}
	d, err := replay.NewDriver(p, c.Collector.Config, b.js, opts...)
	if err != nil {
		return err
	}
	err = d.Run(ctx)
	st := p.Stats()
	for _, le := range p.Errors() {
		log.Warn("bad trace line", "file", c.Collector.Trace.File, "line", le.Line, "reason", le.Reason)
	}
	log.Info("replay finished", "file", c.Collector.Trace.File, "ticks", d.Ticks(), "batches", d.Published().Batches,
		"job_events", d.JobEvents(), "bad_lines", r.Skipped(), "late_records", st.LateRecords)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
