package main

import (
	"context"
	"time"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/collector/daemon"
	"github.com/gpupool/gpupool/internal/config"
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
	AgentKey    string        `name:"agent-public-key-file" help:"Enable the node agent: reclaim commands signed by the scheduler's ed25519 key (this file: its public key, PEM) are carried out."`
	AgentSecret string        `name:"agent-secret-file" help:"Enable the node agent with a secret shared with the scheduler instead (the older mode)."`
	Metrics     string        `help:"Address for /metrics, /healthz, /readyz (e.g. :9464); empty disables."`
}

// Run samples and publishes until interrupted (or, for replay, the trace ends).
func (cc *CollectorCmd) Run(g *Globals, ctx context.Context) error {
	c, log, err := g.setup(cc.apply)
	if err != nil {
		return err
	}
	b, err := bus.Open(ctx, c.Bus, "gpupool-collector", log, bus.Offline(c.Collector.Spool.Dir != "")) // a spool holds the samples meanwhile
	if err != nil {
		return err
	}
	defer b.Close()
	reg := newRegistry()
	if err := serveMetrics(ctx, c.MetricsListen, c, reg, b.Ready, log); err != nil {
		return err
	}
	svc, err := daemon.New(c.Collector, c.Sim, b, daemon.WithLogger(log), daemon.WithRegisterer(reg),
		daemon.WithSimulation(cc.Duration, c.Collector.Trace.Speed, c.Ingest.MaxFutureSkew))
	if err != nil {
		return err
	}
	return svc.Run(ctx)
}

// apply puts the flags over the configuration.
func (cc *CollectorCmd) apply(c *config.Config) {
	daemon.Flags{Source: cc.Source, Trace: cc.Trace, Record: cc.Record, DCGMAddress: cc.DCGMAddress, Cluster: cc.Cluster,
		Node: cc.Node, Strict: cc.Strict, Interval: cc.Interval, Speed: cc.Speed, SpoolDir: cc.SpoolDir,
		AgentKey: cc.AgentKey, AgentSecret: cc.AgentSecret}.Apply(&c.Collector, &c.Sim)
	setIf(&c.MetricsListen, cc.Metrics)
}
