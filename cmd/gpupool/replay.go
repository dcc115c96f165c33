package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/gpupool/gpupool/collector"
	"github.com/gpupool/gpupool/collector/replay"
	"github.com/gpupool/gpupool/schemas"
)

// replayDriver plays a trace: per tick, each node's batch goes through that node's
// collector (created when the node first appears), and job events through a job
// publisher.
type replayDriver struct {
	player     *replay.Player
	cc         collector.Config
	js         jetstream.JetStream
	metrics    *collector.Metrics
	log        *slog.Logger
	opts       []collector.Option
	jobs       *jobPublisher
	collectors map[string]*collector.Collector
	sources    map[string]*batchSource
	all        []*collector.Collector
	ticks      int
}

// batchSource hands one prepared batch to a collector as a Source.
type batchSource struct{ b *schemas.SampleBatch }

func (s *batchSource) Sample(_ context.Context, _ time.Time, b *schemas.SampleBatch) error {
	if s.b != nil {
		b.GPUs = append(b.GPUs, s.b.GPUs...)
		b.Processes = append(b.Processes, s.b.Processes...)
	}
	return nil
}

func newReplayDriver(p *replay.Player, cc collector.Config, js jetstream.JetStream, m *collector.Metrics, log *slog.Logger, opts ...collector.Option) *replayDriver {
	return &replayDriver{
		player: p, cc: cc, js: js, metrics: m, log: log, opts: opts,
		jobs:       newJobPublisher(js, "replay", log),
		collectors: map[string]*collector.Collector{}, sources: map[string]*batchSource{},
	}
}

func (d *replayDriver) published() collector.Stats { return sumStats(d.all) }

// run plays until the trace ends (nil) or ctx ends.
func (d *replayDriver) run(ctx context.Context) error {
	for {
		tick, err := d.player.Next(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		d.ticks++
		if err := d.jobs.publish(ctx, tick.Jobs); err != nil {
			return err
		}
		for _, b := range tick.Batches {
			col, src, err := d.collectorFor(b.Cluster, b.Node)
			if err != nil {
				return err
			}
			src.b = b
			err = col.Collect(ctx, tick.At)
			src.b = nil
			if err != nil {
				return err
			}
		}
	}
}

func (d *replayDriver) collectorFor(cluster, node string) (*collector.Collector, *batchSource, error) {
	key := cluster + "\x00" + node
	if c, ok := d.collectors[key]; ok {
		return c, d.sources[key], nil
	}
	cfg := d.cc
	cfg.Cluster, cfg.Node = cluster, node
	cfg.Spool.Dir = "" // a replay can be run again; it needs no spool
	src := &batchSource{}
	c, err := collector.New(cfg, src, d.js, d.log, d.metrics, d.opts...)
	if err != nil {
		return nil, nil, err
	}
	d.collectors[key], d.sources[key] = c, src
	d.all = append(d.all, c)
	return c, src, nil
}
