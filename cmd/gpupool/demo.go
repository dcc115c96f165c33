package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/gpupool/gpupool/analyzer"
	"github.com/gpupool/gpupool/collector"
	"github.com/gpupool/gpupool/collector/sim"
	"github.com/gpupool/gpupool/ingest"
	"github.com/gpupool/gpupool/internal/config"
	"github.com/gpupool/gpupool/reports"
	"github.com/gpupool/gpupool/reports/summary"
	"github.com/gpupool/gpupool/store"
)

// defaultDemoAnalyzeEvery is the simulated time between the demo's analyzer passes
// (when the machine keeps up; see demoAnalyzer).
const defaultDemoAnalyzeEvery = 15 * time.Minute

// DemoCmd runs the whole pipeline in one process on a simulated fleet.
type DemoCmd struct {
	Duration time.Duration `help:"Simulated time to run (default 24h)."`
	Speed    float64       `help:"Simulated seconds per wall-clock second (default 1440: a day in a minute); 0 runs as fast as possible." default:"-1"`
	Clusters int           `help:"Simulated clusters (default 2)."`
	Nodes    int           `help:"Nodes per cluster (default 4)."`
	GPUs     int           `name:"gpus" help:"GPUs per node (default 8)."`
	Tick     time.Duration `help:"Sample interval in simulated time (default 10s)."`
	Seed     uint64        `help:"Random seed of the simulated workload (default 1)."`
	Start    time.Time     `help:"Simulated start (RFC 3339; default: duration before the start of today, UTC)." format:"2006-01-02T15:04:05Z07:00"`
	Serve    bool          `help:"After the summary, keep the embedded NATS, the store, ingest and /metrics running until interrupted."`
	Metrics  string        `help:"Address for /metrics, /healthz, /readyz (e.g. 127.0.0.1:9464); empty disables."`
	Analyze  time.Duration `name:"analyze-every" help:"Simulated time between analyzer passes (default 15m; longer when passes fall behind the fleet; analyzer.findings.resolve_after is raised to it if shorter)."`

	out io.Writer // stdout unless a test sets it
}

// demoRun is one demo's running parts.
type demoRun struct {
	cfg     config.Config
	log     *slog.Logger
	bus     *busConn
	store   store.Store
	ingest  *ingest.Ingester
	driver  *sim.Driver
	stopIng context.CancelFunc
	ingDone chan error
	an      *demoAnalyzer
}

// Run executes the demo.
func (d *DemoCmd) Run(g *Globals, kctx context.Context) error {
	c, err := d.config(g)
	if err != nil {
		return err
	}
	log := newLogger(c.LogLevel)
	var out io.Writer = os.Stdout
	if d.out != nil {
		out = d.out
	}
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
	r, err := startDemo(kctx, c, log)
	if err != nil {
		return err
	}
	defer r.close()
	fmt.Fprintf(out, "gpupool demo: %d cluster(s) × %d node(s) × %d GPUs (%d GPU units incl. MIG slices), %s of simulated time from %s at %gx\n",
		c.Sim.Clusters, c.Sim.NodesPerCluster, c.Sim.GPUsPerNode, r.driver.GPUCount(),
		c.Demo.Duration, c.Sim.Start.Format(time.RFC3339), c.Demo.Speed)
	fmt.Fprintf(out, "data: %s   (NATS %s)\n", c.DataDir, natsWhere(r.bus, c))

	prog := newProgress(os.Stderr)
	ctx, cancel := context.WithCancel(kctx)
	defer cancel()
	simDone := make(chan error, 1)
	go func() { simDone <- r.driver.Run(ctx) }()
	ticker := time.NewTicker(250 * time.Millisecond)
	defer ticker.Stop()
	for running := true; running; {
		select {
		case err := <-simDone:
			running = false
			if err != nil {
				prog.done()
				return fmt.Errorf("demo: simulation: %w", err)
			}
		case err := <-r.ingDone:
			prog.done()
			return fmt.Errorf("demo: ingest stopped: %w", err)
		case <-ticker.C:
			prog.update(r.progressLine(), false)
		}
	}
	prog.update(r.progressLine(), true)
	prog.done()

	// Wait for ingest to store everything that was published, then for the
	// analyzer's passes over it.
	if err := r.drain(kctx, prog); err != nil {
		return err
	}
	if err := r.an.finish(kctx, r.driver.End(), prog); err != nil {
		return err
	}
	r.stopIngest()
	elapsed := time.Since(wallStart)
	if err := r.summary(kctx, out, elapsed); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nQuery it:  gpupool sql --data-dir %s \"SELECT team, count() AS jobs FROM jobs GROUP BY team\"\n", c.DataDir)
	if d.Serve {
		return r.serve(kctx, out)
	}
	return nil
}

// config builds the demo's configuration from the file, globals and flags.
func (d *DemoCmd) config(g *Globals) (config.Config, error) {
	c, err := g.loadConfig()
	if err != nil {
		return c, err
	}
	if d.Duration > 0 {
		c.Demo.Duration = d.Duration
	}
	if d.Speed >= 0 {
		c.Demo.Speed = d.Speed
	}
	if d.Metrics != "" {
		c.MetricsListen = d.Metrics
	}
	if d.Clusters > 0 {
		c.Sim.Clusters = d.Clusters
	}
	if d.Nodes > 0 {
		c.Sim.NodesPerCluster = d.Nodes
	}
	if d.GPUs > 0 {
		c.Sim.GPUsPerNode = d.GPUs
	}
	if d.Tick > 0 {
		c.Sim.Tick = d.Tick
	}
	if d.Seed > 0 {
		c.Sim.Seed = d.Seed
	}
	if !d.Start.IsZero() {
		c.Sim.Start = d.Start.UTC()
	}
	// The demo's passes run on simulated time (see demoAnalyzer).
	every := d.Analyze
	if every <= 0 {
		every = defaultDemoAnalyzeEvery
	}
	c.Analyzer.Interval = every
	c.Analyzer.Findings.ResolveAfter = max(c.Analyzer.Findings.ResolveAfter, every)
	c.Analyzer.Findings.HintInterval = max(c.Analyzer.Findings.HintInterval, every)
	if c.Sim.Start.IsZero() {
		// End at the start of today (UTC): recent, so inside the raw-sample TTL, and
		// never in the future.
		c.Sim.Start = time.Now().UTC().Truncate(24 * time.Hour).Add(-c.Demo.Duration)
	}
	if c.Demo.Speed == 0 {
		c.Demo.Speed = 1e9 // as fast as possible
	}
	if err := g.finish(&c); err != nil {
		return c, err
	}
	if end := c.Sim.Start.Add(c.Demo.Duration); end.After(time.Now().Add(c.Ingest.MaxFutureSkew)) {
		return c, fmt.Errorf("demo: the simulation would end at %s, in the future; ingest rejects samples more than %s ahead (ingest.max_future_skew)", end.Format(time.RFC3339), c.Ingest.MaxFutureSkew)
	}
	return c, nil
}

func natsWhere(b *busConn, c config.Config) string {
	if c.Bus.URL != "" {
		return c.Bus.URL
	}
	if u := b.srv.ClientURL(); u != "" {
		return "embedded, " + u
	}
	return "embedded, in-process"
}

// startDemo starts bus, store, ingest and the simulated fleet (not yet running).
func startDemo(ctx context.Context, c config.Config, log *slog.Logger) (*demoRun, error) {
	r := &demoRun{cfg: c, log: log}
	var err error
	if r.bus, err = openBus(ctx, c, "gpupool-demo", log); err != nil {
		return nil, err
	}
	if r.store, err = openMigrated(ctx, c, log); err != nil {
		r.close()
		return nil, err
	}
	reg := newRegistry()
	if r.ingest, err = ingest.New(c.Ingest, r.bus.js, r.store, ingest.WithLogger(log), ingest.WithMetrics(ingest.NewMetrics(reg))); err != nil {
		r.close()
		return nil, err
	}
	ictx, cancel := context.WithCancel(context.Background())
	r.stopIng = cancel
	r.ingDone = make(chan error, 1)
	go func() { r.ingDone <- r.ingest.Run(ictx) }()
	end := c.Sim.Start.Add(c.Demo.Duration)
	dc := sim.DriverConfig{Fleet: c.Sim, Collector: c.Collector.Config, End: end, Speed: c.Demo.Speed}
	if r.driver, err = sim.NewDriver(dc, r.bus.js, sim.WithLogger(log), sim.WithMetrics(collector.NewMetrics(reg))); err != nil {
		r.close()
		return nil, err
	}
	if r.an, err = startDemoAnalyzer(ctx, c, r.store, r.bus, r.driver, r.ingest, reg, log); err != nil {
		r.close()
		return nil, err
	}
	if c.MetricsListen != "" {
		if err := serveMetrics(ctx, c.MetricsListen, reg, func() error { return nil }, log); err != nil {
			r.close()
			return nil, err
		}
	}
	return r, nil
}

func (r *demoRun) progressLine() string {
	d := r.driver
	now := d.Now()
	frac := float64(now.Sub(d.Start())) / float64(d.End().Sub(d.Start()))
	pub := d.Published()
	st := r.ingest.Stats()
	fs := d.FleetStats()
	return fmt.Sprintf("%s %3.0f%%  sim %s  jobs %d running %d queued  GPUs %d/%d busy  rows published %s stored %s  %s",
		bar(frac), frac*100, now.Format("2006-01-02 15:04"), fs.JobsRunning, fs.JobsQueued, fs.GPUsAllocated, fs.GPUs,
		reports.Count(pub.GPURows+pub.ProcessRows+d.JobEvents()), reports.Count(st.RowsInserted), r.an.progress())
}

// drain waits until ingest has acknowledged every published message.
func (r *demoRun) drain(ctx context.Context, prog *progress) error {
	deadline := time.Now().Add(10 * time.Minute)
	for {
		backlog, err := ingest.Backlog(ctx, r.bus.js, r.cfg.Ingest.Durable)
		if err == nil && backlog["samples"] == 0 && backlog["jobs"] == 0 {
			pub := r.driver.Published()
			if r.ingest.Stats().RowsInserted+r.ingest.Stats().DedupHits >= pub.GPURows+pub.ProcessRows+r.driver.JobEvents() || time.Now().After(deadline) {
				prog.done()
				return nil
			}
		}
		if time.Now().After(deadline) {
			prog.done()
			return fmt.Errorf("demo: ingest did not catch up within 10 minutes (backlog %v, err %v)", backlog, err)
		}
		prog.update(fmt.Sprintf("waiting for ingest: %v messages left  rows stored %s", backlog, reports.Count(r.ingest.Stats().RowsInserted)), false)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-r.ingDone:
			return fmt.Errorf("demo: ingest stopped: %w", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (r *demoRun) stopIngest() {
	if r.stopIng != nil {
		r.stopIng()
		<-r.ingDone
		r.stopIng = nil
	}
}

// summary prints the run's tables.
func (r *demoRun) summary(ctx context.Context, w io.Writer, elapsed time.Duration) error {
	d := r.driver
	s, err := analyzer.Summarize(ctx, r.store, d.Start(), d.End())
	if err != nil {
		return err
	}
	pub := d.Published()
	stored := map[string]uint64{}
	dups := map[string]uint64{}
	for i := range s.Rows.Rows {
		name, _ := s.Rows.String(i, "table_name")
		n, _ := s.Rows.Int(i, "rows")
		dup, _ := s.Rows.Int(i, "duplicates")
		stored[name], dups[name] = uint64(n), uint64(dup)
	}
	counts := &store.Result{Columns: []store.ColumnMeta{
		{Name: "kind", Type: "String"}, {Name: "published", Type: "UInt64"}, {Name: "stored", Type: "UInt64"},
		{Name: "lost", Type: "Int64"}, {Name: "duplicates", Type: "UInt64"},
	}}
	var lost int64
	for _, k := range []struct {
		kind, table string
		pub         uint64
	}{
		{"gpu samples", "gpu_samples", pub.GPURows},
		{"process samples", "process_samples", pub.ProcessRows},
		{"job events", "job_events", d.JobEvents()},
	} {
		l := int64(k.pub) - int64(stored[k.table])
		lost += max(l, 0)
		counts.Rows = append(counts.Rows, []any{k.kind, k.pub, stored[k.table], l, dups[k.table]})
	}
	fmt.Fprintf(w, "\nSimulated %s (%s → %s) in %s.\n", d.End().Sub(d.Start()), d.Start().Format("2006-01-02 15:04"), d.End().Format("2006-01-02 15:04"), elapsed.Round(100*time.Millisecond))
	sections := []summary.Section{
		{Title: "GPU-hours by team and card type (allocated to jobs; a MIG slice counts as its share of the GPU)", Table: s.GPUHours},
		{Title: "Utilisation by card type (fraction of time active, over every sample: p50 and p95)", Table: s.Utilisation},
		{Title: "Jobs (queue wait in minutes, submit to start)", Table: s.Jobs},
		{Title: "Samples: published by collectors vs stored in ClickHouse", Table: counts},
	}
	an, err := r.an.summary(ctx, d.Start(), d.End())
	if err != nil {
		return err
	}
	eff, err := schedulerEffect(ctx, r.cfg.Sim, d.End().Sub(d.Start()))
	if err != nil {
		return err
	}
	an = append(an, eff)
	sections = append(sections[:3], append(an, sections[3:]...)...)
	if err := summary.Write(w, sections); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%s\n", r.an.passLine())
	st := r.ingest.Stats()
	fmt.Fprintf(w, "\nSamples lost: %d   dead letters: %d   redelivered-and-deduplicated: %d\n", lost, st.DeadLetters, st.DedupHits)
	if lost != 0 {
		return errors.New("demo: samples were lost between collectors and the store")
	}
	return nil
}

// serve keeps the bus, store and ingest running until interrupted.
func (r *demoRun) serve(ctx context.Context, w io.Writer) error {
	ictx, cancel := context.WithCancel(ctx)
	defer cancel()
	ing, err := ingest.New(r.cfg.Ingest, r.bus.js, r.store, ingest.WithLogger(r.log))
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- ing.Run(ictx) }()
	fmt.Fprintf(w, "\nServing: NATS %s; ingest running; press Ctrl-C to stop.\n", natsWhere(r.bus, r.cfg))
	select {
	case <-ctx.Done():
		cancel()
		<-done
		return nil
	case err := <-done:
		return err
	}
}

func (r *demoRun) close() {
	if r.an != nil {
		r.an.stop()
	}
	r.stopIngest()
	if r.store != nil {
		_ = r.store.Close()
	}
	if r.bus != nil {
		r.bus.Close()
	}
}
