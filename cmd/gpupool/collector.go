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
	"github.com/gpupool/gpupool/collector/dcgm"
	"github.com/gpupool/gpupool/collector/nvml"
	"github.com/gpupool/gpupool/collector/replay"
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
	var opts []collector.Option
	var rec collector.Recorder
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
		opts = append(opts, collector.WithRecorder(r))
		rec = r
	}
	switch c.Collector.Source {
	case "sim":
		return runSim(ctx, c, cc, b, metrics, rec, opts, log)
	case "replay":
		return runReplay(ctx, c, b, metrics, rec, opts, log)
	}
	return runNode(ctx, c, b, reg, metrics, opts, log)
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

// gpuSource is a real node's source.
type gpuSource interface {
	collector.Source
	Close() error
}

// openGPUSource opens DCGM or NVML as configured; auto tries DCGM, then NVML, and
// fails (never falls back to a simulation) when neither is there. The sources'
// metrics (fields supported, call errors, health events) go to reg.
func openGPUSource(c config.Config, reg prometheus.Registerer, log *slog.Logger) (gpuSource, string, error) {
	kind := c.Collector.Source
	nvmlMetrics := nvml.WithMetrics(nvml.NewMetrics(reg))
	if kind == "nvml" {
		s, err := nvml.New(c.Collector.NVML, log, nvmlMetrics)
		if err != nil {
			return nil, "", err
		}
		return s, "nvml", nil
	}
	// DCGM cannot list a GPU's processes: NVML does that for it.
	procs, nvmlErr := nvml.New(c.Collector.NVML, log, nvmlMetrics)
	d, err := dcgm.New(c.Collector.DCGM, processLister(procs, nvmlErr), log, dcgm.WithMetrics(dcgm.NewMetrics(reg)))
	if err == nil {
		return &dcgmWithNVML{Source: d, nvml: procs}, "dcgm", nil
	}
	if kind == "dcgm" {
		if procs != nil {
			_ = procs.Close()
		}
		return nil, "", err
	}
	if nvmlErr == nil {
		log.Info("DCGM not available, using NVML", "dcgm_err", err)
		return procs, "nvml", nil
	}
	return nil, "", fmt.Errorf("collector: no GPU telemetry on this node:\n  DCGM: %v\n  NVML: %v\n(on a machine without GPUs, use --source sim or --source replay)", err, nvmlErr)
}

func processLister(s *nvml.Source, err error) dcgm.ProcessLister {
	if err != nil || s == nil {
		return nil
	}
	return s
}

// dcgmWithNVML closes the NVML source that lists processes for DCGM.
type dcgmWithNVML struct {
	*dcgm.Source
	nvml *nvml.Source
}

func (d *dcgmWithNVML) Close() error {
	err := d.Source.Close()
	if d.nvml != nil {
		err = errors.Join(err, d.nvml.Close())
	}
	return err
}

// runNode collects this node's GPUs until interrupted.
func runNode(ctx context.Context, c config.Config, b *busConn, reg prometheus.Registerer, metrics *collector.Metrics, opts []collector.Option, log *slog.Logger) error {
	src, kind, err := openGPUSource(c, reg, log)
	if err != nil {
		return err
	}
	defer src.Close()
	attr, err := attribution.New(c.Collector.Attribution)
	if err != nil {
		return err
	}
	opts = append(opts, collector.WithAttributor(attr))
	col, err := collector.New(c.Collector.Config, src, b.js, log, metrics, opts...)
	if err != nil {
		return err
	}
	defer col.Close()
	if c.Collector.Agent.SecretFile != "" {
		a, err := agent.New(c.Collector.Agent, b.nc, col, log)
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
func runSim(ctx context.Context, c config.Config, cc *CollectorCmd, b *busConn, metrics *collector.Metrics, rec collector.Recorder, opts []collector.Option, log *slog.Logger) error {
	var end time.Time
	if cc.Duration > 0 {
		end = c.Sim.Start.Add(cc.Duration)
	}
	speed := 1.0
	if cc.Speed >= 0 {
		speed = cc.Speed
	}
	d, err := newFleetDriver(c.Sim, end, speed, c.Collector.Config, b.js, metrics, log, opts...)
	if err != nil {
		return err
	}
	d.jobs.rec = rec
	log.Info("simulated fleet publishing", "nodes", len(d.collectors), "gpus", d.fleet.GPUCount(), "tick", c.Sim.Tick, "speed", speed)
	err = d.run(ctx)
	pub := d.published()
	log.Info("collector stopped", "batches", pub.Batches, "gpu_rows", pub.GPURows, "process_rows", pub.ProcessRows, "job_events", d.jobs.count.Load())
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// runReplay plays the trace through one collector per node it names.
func runReplay(ctx context.Context, c config.Config, b *busConn, metrics *collector.Metrics, rec collector.Recorder, opts []collector.Option, log *slog.Logger) error {
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
	d := newReplayDriver(p, c.Collector.Config, b.js, metrics, log, opts...)
	d.jobs.rec = rec
	err = d.run(ctx)
	st := p.Stats()
	for _, le := range p.Errors() {
		log.Warn("bad trace line", "file", c.Collector.Trace.File, "line", le.Line, "reason", le.Reason)
	}
	log.Info("replay finished", "file", c.Collector.Trace.File, "ticks", d.ticks, "batches", d.published().Batches,
		"job_events", d.jobs.count.Load(), "bad_lines", r.Skipped(), "late_records", st.LateRecords)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
