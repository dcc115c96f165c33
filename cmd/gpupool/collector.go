package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gpupool/gpupool/collector"
)

// CollectorCmd runs collectors. With --source sim it simulates a whole fleet (every
// node of sim.* in the configuration) in real time, or faster with --speed, and
// publishes its samples and job events: a load generator for a real pipeline.
type CollectorCmd struct {
	Source   string        `help:"Where samples come from: sim." enum:"sim" default:"sim"`
	Cluster  string        `help:"Cluster name (default from the configuration)."`
	Node     string        `help:"Node name (default: host name)."`
	Interval time.Duration `help:"Sampling interval (default 1s; for sim, the simulated tick)."`
	Speed    float64       `help:"For sim: simulated seconds per wall second." default:"1"`
	Duration time.Duration `help:"For sim: stop after this much simulated time (default: run until interrupted)."`
	Metrics  string        `help:"Address for /metrics, /healthz, /readyz (e.g. :9464); empty disables."`
}

// Run samples and publishes until interrupted.
func (cc *CollectorCmd) Run(g *Globals, ctx context.Context) error {
	c, err := g.loadConfig()
	if err != nil {
		return err
	}
	c.Collector.Source = cc.Source
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
	if cc.Metrics != "" {
		c.MetricsListen = cc.Metrics
	}
	if c.Sim.Start.IsZero() {
		c.Sim.Start = time.Now().UTC().Truncate(c.Sim.Tick)
	}
	if err := g.finish(&c); err != nil {
		return err
	}
	if cc.Speed <= 0 {
		return fmt.Errorf("--speed: %g must be positive", cc.Speed)
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
	var end time.Time
	if cc.Duration > 0 {
		end = c.Sim.Start.Add(cc.Duration)
	}
	d, err := newFleetDriver(c.Sim, end, cc.Speed, c.Collector.Config, b.js, collector.NewMetrics(reg), log)
	if err != nil {
		return err
	}
	log.Info("simulated fleet publishing", "nodes", len(d.collectors), "gpus", d.fleet.GPUCount(), "tick", c.Sim.Tick, "speed", cc.Speed)
	err = d.run(ctx)
	pub := d.published()
	log.Info("collector stopped", "batches", pub.Batches, "gpu_rows", pub.GPURows, "process_rows", pub.ProcessRows, "job_events", d.jobEvents.Load())
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
