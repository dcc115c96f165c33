package demo

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/collector"
	"github.com/gpupool/gpupool/collector/sim"
	"github.com/gpupool/gpupool/ingest"
	"github.com/gpupool/gpupool/internal/config"
	"github.com/gpupool/gpupool/reports"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/backend"
)

// Demo is one run of the demo.
type Demo struct {
	cfg  config.Config
	log  *slog.Logger
	out  io.Writer
	prog *reports.Progress
	reg  prometheus.Registerer

	bus     *bus.Conn
	store   store.Store
	ingest  *ingest.Ingester
	driver  *sim.Driver
	stopIng context.CancelFunc
	ingDone chan error
	passes  *passes
	loop    *loop

	// enforce runs the scheduler's policies on the analyzer's findings (the
	// closed loop); baseline first runs the fleet with them off, for the effect
	// table; phase names the run on the status line; noPasses runs no analyzer
	// (the baseline's telemetry is all it needs).
	enforce, baseline, noPasses bool
	phase                       string
	// placement has the scheduler place jobs on the fleet's nodes (reservations,
	// backfill, time limits); off, it admits by GPUs free per card and cluster
	// and the fleet places what it admitted.
	placement bool

	consoleAddr, consoleURL, consoleToken string
	hooks                                 Hooks
	// tickCtx is the context of the goroutine that runs the fleet (simulate),
	// set on it before it runs: the ticks' hooks run there, under its labels.
	tickCtx context.Context
}

// Option changes how a Demo is built.
type Option func(*Demo)

// WithLogger sets the logger (default: discarded).
func WithLogger(log *slog.Logger) Option { return func(d *Demo) { d.log = log } }

// WithOutput sets where the summary goes (default: standard output).
func WithOutput(w io.Writer) Option { return func(d *Demo) { d.out = w } }

// WithProgress sets the status line (default: standard error).
func WithProgress(p *reports.Progress) Option { return func(d *Demo) { d.prog = p } }

// WithRegisterer registers the collectors', ingest's and the analyzer's metrics
// with reg (default: kept, not registered).
func WithRegisterer(reg prometheus.Registerer) Option { return func(d *Demo) { d.reg = reg } }

// WithEnforcement turns the scheduler's policies on the analyzer's findings on or
// off (default on: the closed loop).
func WithEnforcement(on bool) Option { return func(d *Demo) { d.enforce = on } }

// WithBaseline turns the policies-off run before the main one on or off (default
// on; off leaves the effect table out).
func WithBaseline(on bool) Option { return func(d *Demo) { d.baseline = on } }

// WithPlacement turns the scheduler's placement of the jobs it admits on the
// fleet's nodes (reservations, backfill, time limits of twice the planned
// run) on or off, in both runs (default off: it admits by GPUs free per card
// and cluster and the fleet places them; docs/demo.md says what each gives on
// the demo's day).
func WithPlacement(on bool) Option { return func(d *Demo) { d.placement = on } }

// New checks the configuration (Apply it first) and returns a demo ready to Run.
func New(cfg config.Config, opts ...Option) (*Demo, error) {
	if err := check(cfg, time.Now()); err != nil {
		return nil, err
	}
	d := &Demo{cfg: cfg, log: slog.New(slog.DiscardHandler), out: os.Stdout, enforce: true, baseline: true}
	for _, o := range opts {
		o(d)
	}
	if d.prog == nil {
		d.prog = reports.NewProgress(os.Stderr)
	}
	return d, nil
}

// Run starts everything, runs the fleet to its end, waits for ingest and the
// analyzer to catch up, prints the summary, and with demo.serve keeps the bus, the
// store and ingest running until ctx ends. It fails when a sample was lost.
func (d *Demo) Run(ctx context.Context) error {
	c := d.cfg
	if c.Bus.URL == "" {
		// The embedded servers start afresh: a demo is a reproducible run, and
		// leftover streams would be ingested twice.
		for _, dir := range []string{c.Bus.Embedded.DataDir, c.Store.CHDB.Path} {
			if err := os.RemoveAll(dir); err != nil {
				return fmt.Errorf("demo: clear %s: %w", dir, err)
			}
		}
	}
	wallStart := time.Now()
	var base *Effect
	if d.baseline && d.enforce {
		b, err := d.runBaseline(ctx)
		if err != nil {
			return err
		}
		base = b
	}
	if err := d.start(ctx); err != nil {
		d.close()
		return err
	}
	defer d.close()
	fmt.Fprintln(d.out, wrap(fmt.Sprintf("gpupool demo: %d cluster(s) × %d node(s) × %d GPUs (%d units to allocate: MIG slices and time-sliced GPUs apart), "+
		"%s of simulated time from %s at %gx", c.Sim.Clusters, c.Sim.NodesPerCluster, c.Sim.GPUsPerNode, d.driver.GPUCount(),
		c.Demo.Duration, c.Sim.Start.Format(time.RFC3339), c.Demo.Speed), maxWidth))
	fmt.Fprintf(d.out, "data: %s   (NATS %s)\n", c.DataDir, d.bus.Where())
	if d.consoleAddr != "" {
		if err := d.startConsole(ctx); err != nil {
			return err
		}
	}
	if d.hooks.Started != nil {
		d.hooks.Started(d)
	}
	if err := d.simulate(ctx); err != nil {
		return err
	}
	if d.loop != nil && d.loop.err != nil {
		return d.loop.err
	}
	// Wait for ingest to store everything that was published, then for the
	// analyzer's passes over it.
	if err := d.drain(ctx); err != nil {
		return err
	}
	if err := d.passes.finish(ctx, d.driver.End(), d.prog); err != nil {
		return err
	}
	hook(d.hooks.Simulated)
	d.stopIngest()
	if err := d.summary(ctx, time.Since(wallStart), base); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "\nQuery it:  gpupool sql --data-dir %s \"SELECT team, count() AS jobs FROM jobs GROUP BY team\"\n", c.DataDir)
	if d.consoleURL != "" {
		d.printConsole()
	}
	hook(d.hooks.Done)
	if c.Demo.Serve {
		return d.serve(ctx)
	}
	if d.consoleURL != "" {
		fmt.Fprintln(d.out, "The console keeps serving the demo's data; press Ctrl-C to stop it (gpupool sql and report run need the store to themselves).")
		<-ctx.Done()
	}
	return nil
}

// start opens the bus and the store and starts ingest, the simulated fleet (not
// yet running) and the analyzer's passes.
func (d *Demo) start(ctx context.Context) error {
	c := d.cfg
	var err error
	d.label(ctx, CompNATS, func(ctx context.Context) { d.bus, err = bus.Open(ctx, c.Bus, "gpupool-demo", d.log) })
	if err != nil {
		return err
	}
	d.label(ctx, CompStore, func(ctx context.Context) { d.store, err = backend.OpenMigrated(ctx, c.Store, d.log) })
	if err != nil {
		return err
	}
	if d.ingest, err = ingest.New(c.Ingest, d.bus.JS, d.store, ingest.WithLogger(d.log), ingest.WithMetrics(ingest.NewMetrics(d.reg))); err != nil {
		return err
	}
	ictx, cancel := context.WithCancel(context.Background())
	d.stopIng = cancel
	d.ingDone = make(chan error, 1)
	go d.label(ictx, CompIngest, func(ctx context.Context) { d.ingDone <- d.ingest.Run(ctx) })
	dc := sim.DriverConfig{Fleet: c.Sim, Collector: c.Collector.Config, End: c.Sim.Start.Add(c.Demo.Duration), Speed: c.Demo.Speed}
	if d.driver, err = sim.NewDriver(dc, d.bus.JS, sim.WithLogger(d.log), sim.WithMetrics(collector.NewMetrics(d.reg))); err != nil {
		return err
	}
	admit, enforce := c.Demo.Admission != config.AdmissionFleet, d.enforce && !d.noPasses
	if admit || enforce {
		// A log line per decision would break the status line: at the default
		// level the scheduler logs warnings and errors only.
		llog := d.log
		if c.LogLevel == "info" {
			llog = quiet(d.log)
		}
		d.label(ctx, CompScheduler, func(ctx context.Context) {
			d.loop, err = startLoop(ctx, d.store, d.bus, d.driver.Fleet(), d.driver.Start(), llog, admit, d.placement, enforce)
		})
		if err != nil {
			return err
		}
	}
	if !d.noPasses {
		d.label(ctx, CompAnalyzer, func(ctx context.Context) {
			d.passes, err = startPasses(ctx, c, d.store, d.bus, d.driver, d.ingest, d.reg, d.log, d.loop)
		})
		if err != nil {
			return err
		}
		d.passes.label = d.label
	}
	d.driver.OnTick(func(now time.Time) {
		ctx := ctx
		if d.tickCtx != nil {
			ctx = d.tickCtx
		}
		if d.loop != nil {
			d.label(ctx, CompScheduler, func(ctx context.Context) { d.loop.tick(ctx, now) })
		}
		if d.passes != nil {
			d.passes.advance(ctx, now)
		}
	})
	return nil
}

// simulate runs the fleet to its end, drawing the status line.
func (d *Demo) simulate(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	simDone := make(chan error, 1)
	go d.label(ctx, CompCollectors, func(ctx context.Context) {
		// The ticks' hooks run on this goroutine: what they label nests in
		// what it is labelled (a label's end restores its context's).
		d.tickCtx = ctx
		simDone <- d.driver.Run(ctx)
	})
	ticker := time.NewTicker(250 * time.Millisecond)
	defer ticker.Stop()
	defer d.prog.Done()
	for {
		select {
		case err := <-simDone:
			if err != nil {
				return fmt.Errorf("demo: simulation: %w", err)
			}
			d.prog.Update(d.progressLine(), true)
			return nil
		case err := <-d.ingDone:
			return fmt.Errorf("demo: ingest stopped: %w", err)
		case <-ticker.C:
			d.prog.Update(d.progressLine(), false)
		}
	}
}

func (d *Demo) progressLine() string {
	dr := d.driver
	now := dr.Now()
	frac := float64(now.Sub(dr.Start())) / float64(dr.End().Sub(dr.Start()))
	pub := dr.Published()
	fs := dr.FleetStats()
	return fmt.Sprintf(d.phase+"%s %3.0f%%  sim %s  jobs %d running %d queued  GPUs %d/%d busy  rows published %s stored %s  %s",
		reports.Bar(frac), frac*100, now.Format("2006-01-02 15:04"), fs.JobsRunning, fs.JobsQueued, fs.GPUsAllocated, fs.GPUs,
		reports.Count(pub.GPURows+pub.ProcessRows+dr.JobEvents()), reports.Count(d.ingest.Stats().RowsInserted), d.passes.progress())
}

// published is every row the fleet's collectors and job publisher had acknowledged.
func (d *Demo) published() uint64 {
	pub := d.driver.Published()
	return pub.GPURows + pub.ProcessRows + d.driver.JobEvents()
}

// stored is what ingest has stored (or found stored already).
func (d *Demo) stored() uint64 {
	st := d.ingest.Stats()
	return st.RowsInserted + st.DedupHits
}

// drain waits until ingest has acknowledged every published message.
func (d *Demo) drain(ctx context.Context) error {
	defer d.prog.Done()
	deadline := time.Now().Add(10 * time.Minute)
	for {
		backlog, err := ingest.Backlog(ctx, d.bus.JS, d.cfg.Ingest.Durable)
		if err == nil && backlog["samples"] == 0 && backlog["jobs"] == 0 && (d.stored() >= d.published() || time.Now().After(deadline)) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("demo: ingest did not catch up within 10 minutes (backlog %v, err %v)", backlog, err)
		}
		d.prog.Update(fmt.Sprintf("waiting for ingest: %v messages left  rows stored %s", backlog, reports.Count(d.ingest.Stats().RowsInserted)), false)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-d.ingDone:
			return fmt.Errorf("demo: ingest stopped: %w", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (d *Demo) stopIngest() {
	if d.stopIng != nil {
		d.stopIng()
		<-d.ingDone
		d.stopIng = nil
	}
}

// serve keeps the bus, store and ingest running until ctx ends.
func (d *Demo) serve(ctx context.Context) error {
	ictx, cancel := context.WithCancel(ctx)
	defer cancel()
	ing, err := ingest.New(d.cfg.Ingest, d.bus.JS, d.store, ingest.WithLogger(d.log))
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- ing.Run(ictx) }()
	fmt.Fprintf(d.out, "\nServing: NATS %s; ingest running; press Ctrl-C to stop.\n", d.bus.Where())
	select {
	case <-ctx.Done():
		cancel()
		<-done
		return nil
	case err := <-done:
		return err
	}
}

func (d *Demo) close() {
	if d.passes != nil {
		d.passes.stop()
	}
	d.stopIngest()
	if d.store != nil {
		_ = d.store.Close()
	}
	if d.bus != nil {
		d.bus.Close()
	}
}
