package main

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"

	"github.com/gpupool/gpupool/collector"
	"github.com/gpupool/gpupool/collector/sim"
)

// fleetDriver runs a simulated fleet on an accelerated clock: each tick it advances
// the fleet, publishes the job events the fleet's scheduler produced, and runs one
// collector per simulated node.
type fleetDriver struct {
	fleet      *sim.Fleet
	collectors []*collector.Collector
	js         jetstream.JetStream
	start, end time.Time
	tick       time.Duration
	// speed is simulated seconds per wall second; 0 runs as fast as possible.
	speed float64
	jobs  *jobPublisher
	log   *slog.Logger
	// onTick, when set, is called after each tick has been published, with the
	// simulated time reached.
	onTick func(now time.Time)

	simNowUnix atomic.Int64 // ms
	// stats is the fleet's Stats after the last tick, for the progress line (the
	// fleet itself is the driver goroutine's alone).
	stats atomic.Pointer[sim.Stats]
}

func newFleetDriver(cfg sim.Config, end time.Time, speed float64, cc collector.Config, js jetstream.JetStream, metrics *collector.Metrics, log *slog.Logger, opts ...collector.Option) (*fleetDriver, error) {
	fleet, err := sim.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	d := &fleetDriver{
		fleet: fleet, js: js, start: cfg.Start, end: end, tick: cfg.Tick, speed: speed,
		jobs: newJobPublisher(js, "sim", log), log: log,
	}
	d.simNowUnix.Store(cfg.Start.UnixMilli())
	for _, n := range fleet.Nodes() {
		c := cc
		c.Cluster, c.Node = n.Cluster(), n.Name()
		col, err := collector.New(c, n, js, log, metrics, opts...)
		if err != nil {
			return nil, err
		}
		d.collectors = append(d.collectors, col)
	}
	return d, nil
}

// simNow is the simulated time reached.
func (d *fleetDriver) simNow() time.Time { return time.UnixMilli(d.simNowUnix.Load()).UTC() }

// fleetStats is the fleet's job and allocation counts after the last tick.
func (d *fleetDriver) fleetStats() sim.Stats {
	if s := d.stats.Load(); s != nil {
		return *s
	}
	return sim.Stats{}
}

// published sums what the collectors had acknowledged.
func (d *fleetDriver) published() collector.Stats { return sumStats(d.collectors) }

// sumStats adds up collectors' totals.
func sumStats(cols []*collector.Collector) collector.Stats {
	var s collector.Stats
	for _, c := range cols {
		cs := c.Stats()
		s.Batches += cs.Batches
		s.GPURows += cs.GPURows
		s.ProcessRows += cs.ProcessRows
		s.PublishErrors += cs.PublishErrors
		s.UnattributedRows += cs.UnattributedRows
	}
	return s
}

// run drives the fleet from start to end (or forever when end is zero).
func (d *fleetDriver) run(ctx context.Context) error {
	wallStart := time.Now()
	workers := max(2, runtime.GOMAXPROCS(0)*2)
	for t := d.start; d.end.IsZero() || t.Before(d.end); t = t.Add(d.tick) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.speed > 0 {
			target := wallStart.Add(time.Duration(float64(t.Sub(d.start)) / d.speed))
			if wait := time.Until(target); wait > 0 {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(wait):
				}
			}
		}
		events := d.fleet.Advance(t)
		st := d.fleet.Stats()
		d.stats.Store(&st)
		if err := d.jobs.publish(ctx, events); err != nil {
			return err
		}
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(workers)
		for _, c := range d.collectors {
			g.Go(func() error { return c.Collect(gctx, t) })
		}
		if err := g.Wait(); err != nil {
			return err
		}
		d.simNowUnix.Store(t.Add(d.tick).UnixMilli())
		if d.onTick != nil {
			d.onTick(t.Add(d.tick))
		}
	}
	return nil
}
