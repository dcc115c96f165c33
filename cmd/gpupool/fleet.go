package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"

	"github.com/gpupool/gpupool/collector"
	"github.com/gpupool/gpupool/collector/sim"
	"github.com/gpupool/gpupool/internal/bus"
	"github.com/gpupool/gpupool/schemas"
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
	speed    float64
	producer string
	log      *slog.Logger

	jobSeq     uint64
	jobEvents  atomic.Uint64
	simNowUnix atomic.Int64 // ms
}

func newFleetDriver(cfg sim.Config, end time.Time, speed float64, cc collector.Config, js jetstream.JetStream, metrics *collector.Metrics, log *slog.Logger) (*fleetDriver, error) {
	fleet, err := sim.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	var id [4]byte
	_, _ = rand.Read(id[:])
	d := &fleetDriver{
		fleet: fleet, js: js, start: cfg.Start, end: end, tick: cfg.Tick, speed: speed,
		producer: "sim-" + hex.EncodeToString(id[:]), log: log,
	}
	d.simNowUnix.Store(cfg.Start.UnixMilli())
	for _, n := range fleet.Nodes() {
		c := cc
		c.Cluster, c.Node = n.Cluster(), n.Name()
		col, err := collector.New(c, n, js, log, metrics)
		if err != nil {
			return nil, err
		}
		d.collectors = append(d.collectors, col)
	}
	return d, nil
}

// simNow is the simulated time reached.
func (d *fleetDriver) simNow() time.Time { return time.UnixMilli(d.simNowUnix.Load()).UTC() }

// published sums what the collectors had acknowledged.
func (d *fleetDriver) published() collector.Stats {
	var s collector.Stats
	for _, c := range d.collectors {
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
		if err := d.publishJobEvents(ctx, d.fleet.Advance(t)); err != nil {
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
	}
	return nil
}

// publishJobEvents sends a tick's job events, one batch per cluster.
func (d *fleetDriver) publishJobEvents(ctx context.Context, events []schemas.JobEvent) error {
	byCluster := map[string][]schemas.JobEvent{}
	for _, e := range events {
		byCluster[e.Cluster] = append(byCluster[e.Cluster], e)
	}
	for cluster, evs := range byCluster {
		d.jobSeq++
		data, err := schemas.EncodeJobEvents(nil, &schemas.JobEventBatch{Producer: d.producer, Seq: d.jobSeq, Events: evs})
		if err != nil {
			return fmt.Errorf("encode job events: %w", err)
		}
		msg := &nats.Msg{Subject: bus.JobsSubject(cluster), Data: data, Header: nats.Header{}}
		msg.Header.Set(schemas.HeaderSchema, schemas.SchemaJobs)
		msg.Header.Set(nats.MsgIdHdr, d.producer+"-"+strconv.FormatUint(d.jobSeq, 10))
		for attempt := 0; ; attempt++ {
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := d.js.PublishMsg(pctx, msg)
			cancel()
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			d.log.Warn("publish job events failed, retrying", "attempt", attempt+1, "err", err)
			time.Sleep(min(time.Duration(attempt+1)*100*time.Millisecond, 5*time.Second))
		}
		d.jobEvents.Add(uint64(len(evs)))
	}
	return nil
}
