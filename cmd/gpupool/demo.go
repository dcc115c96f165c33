package main

import (
	"context"
	"io"
	"time"

	"github.com/gpupool/gpupool/internal/config"
	"github.com/gpupool/gpupool/internal/demo"
)

// DemoCmd runs the whole pipeline in one process on a simulated fleet.
type DemoCmd struct {
	Duration    time.Duration `help:"Simulated time to run (default 24h)."`
	Speed       float64       `help:"Simulated seconds per wall-clock second (default 1440: a day in a minute); 0 runs as fast as possible." default:"-1"`
	Clusters    int           `help:"Simulated clusters (default 2)."`
	Nodes       int           `help:"Nodes per cluster (default 4)."`
	GPUs        int           `name:"gpus" help:"GPUs per node (default 8)."`
	Tick        time.Duration `help:"Sample interval in simulated time (default 10s)."`
	Seed        uint64        `help:"Random seed of the simulated workload (default 1)."`
	Start       time.Time     `help:"Simulated start (RFC 3339; default: duration before the start of today, UTC)." format:"2006-01-02T15:04:05Z07:00"`
	Serve       bool          `help:"After the summary, keep the embedded NATS, the store, ingest and /metrics running until interrupted."`
	Metrics     string        `help:"Address for /metrics, /healthz, /readyz (e.g. 127.0.0.1:9464); empty disables."`
	Console     bool          `default:"true" help:"Serve the web console over the demo's data while it runs and after (--console=false: exit after the summary)."`
	ConsoleAddr string        `name:"console-addr" default:"127.0.0.1:9480" help:"Address of the demo's console."`
	Placement   bool          `default:"true" help:"The scheduler places the fleet's jobs on its nodes (gangs, reservations, backfill, time limits of twice the planned run); --placement=false: it admits by GPUs free per card and cluster and the fleet places them (docs/demo.md)."`
	Analyze     time.Duration `name:"analyze-every" help:"Simulated time between analyzer passes (default 15m; the fleet waits for each; analyzer.findings.resolve_after is raised to it if shorter)."`

	out io.Writer // stdout unless a test sets it
}

// Run executes the demo.
func (d *DemoCmd) Run(g *Globals, ctx context.Context) error {
	c, log, err := g.setup(d.apply)
	if err != nil {
		return err
	}
	reg := newRegistry()
	if err := serveMetrics(ctx, c.MetricsListen, c, reg, func() error { return nil }, log); err != nil {
		return err
	}
	opts := []demo.Option{demo.WithLogger(log), demo.WithOutput(stdout(d.out)), demo.WithRegisterer(reg), demo.WithPlacement(d.Placement)}
	if d.Console {
		opts = append(opts, demo.WithConsole(d.ConsoleAddr))
	}
	run, err := demo.New(c, opts...)
	if err != nil {
		return err
	}
	return run.Run(ctx)
}

// apply puts the flags over the configuration, then the demo's own defaults.
func (d *DemoCmd) apply(c *config.Config) {
	withMetrics(d.Metrics)(c)
	demo.Flags{Duration: d.Duration, Speed: d.Speed, Serve: d.Serve, Clusters: d.Clusters, Nodes: d.Nodes, GPUs: d.GPUs,
		Tick: d.Tick, Seed: d.Seed, Start: d.Start, AnalyzeEvery: d.Analyze}.Apply(c)
}
