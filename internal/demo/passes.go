package demo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpupool/gpupool/analyzer"
	"github.com/gpupool/gpupool/analyzer/chargeback"
	"github.com/gpupool/gpupool/analyzer/clock"
	"github.com/gpupool/gpupool/analyzer/findings"
	"github.com/gpupool/gpupool/analyzer/pricebook"
	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/collector/sim"
	"github.com/gpupool/gpupool/ingest"
	"github.com/gpupool/gpupool/internal/config"
	"github.com/gpupool/gpupool/internal/summary"
	"github.com/gpupool/gpupool/reports"
	"github.com/gpupool/gpupool/store"
)

// passWait is the longest a pass waits for ingest to store its data; a pass that
// waited that long runs on what is stored, and says so.
const passWait = 5 * time.Minute

// passes runs analyzer passes on the demo's simulated clock, in lockstep with the
// fleet (analyzer/clock inline): when the fleet passes a pass time, the fleet
// waits while the pass waits for ingest to store everything published up to then,
// runs at that simulated time and, with enforcement, the scheduler acts on its
// findings (loop). Each pass sees exactly the data up to its time and its
// decisions land at that time, so a seed gives the same findings and actions
// every run, however loaded the machine (a pass skipped because the machine was
// slow made the counts differ between runs).
type passes struct {
	svc    *analyzer.Service
	st     store.Store
	driver *sim.Driver
	every  time.Duration
	runner *clock.Runner
	loop   *loop
	err    error // the first error of a pass run from a tick
	waited int   // passes that ran before ingest caught up (passWait)
	// loopTook is the wall time the scheduler's passes took, within the passes'.
	loopTook time.Duration
	// label runs a component's work (Demo.label; nil: f(ctx)).
	label func(ctx context.Context, component string, f func(context.Context))
}

// startPasses seeds an empty price book, creates the analyzer service (and with
// enforce the scheduler closing the loop) and hooks its passes to the fleet's
// ticks.
func startPasses(ctx context.Context, c config.Config, st store.Store, b *bus.Conn, driver *sim.Driver,
	ing *ingest.Ingester, reg prometheus.Registerer, log *slog.Logger, lp *loop) (*passes, error) {
	prices, err := pricebook.Read(c.Analyzer.PriceBook)
	if err != nil {
		return nil, err
	}
	empty, err := pricebook.Empty(ctx, st)
	if err != nil {
		return nil, err
	}
	if empty {
		if _, err := pricebook.Load(ctx, st, prices); err != nil {
			return nil, err
		}
	}
	// A log line per pass would break the status line: at the default level the
	// passes log warnings and errors only.
	alog := log
	if c.LogLevel == "info" {
		alog = quiet(log)
	}
	svc, err := analyzer.New(c.Analyzer, st, analyzer.WithPublisher(findings.JetStreamPublisher{JS: b.JS}),
		analyzer.WithMetrics(analyzer.NewMetrics(reg)), analyzer.WithLogger(alog))
	if err != nil {
		return nil, err
	}
	p := &passes{svc: svc, st: st, every: c.Analyzer.Interval, driver: driver}
	if lp != nil && lp.cons != nil {
		p.loop = lp
	}
	pass := func(ctx context.Context, at time.Time) error {
		var err, lerr error
		p.run(ctx, CompAnalyzer, func(ctx context.Context) { err = svc.RunPass(ctx, at) })
		if p.loop != nil && ctx.Err() == nil {
			start := time.Now()
			p.run(ctx, CompScheduler, func(ctx context.Context) { lerr = p.loop.pass(ctx, at) })
			err = errors.Join(err, lerr)
			p.loopTook += time.Since(start)
		}
		return err
	}
	p.runner, err = clock.New(clock.Config{Interval: c.Analyzer.Interval, Start: driver.Start()}, pass, p.barrier(driver, ing), clock.WithLogger(log))
	if err != nil {
		return nil, err
	}
	return p, nil
}

// run runs f as component's work (label).
func (p *passes) run(ctx context.Context, component string, f func(context.Context)) {
	if p.label == nil {
		f(ctx)
		return
	}
	p.label(ctx, component, f)
}

// advance runs the passes due by now, the fleet's time after a tick.
func (p *passes) advance(ctx context.Context, now time.Time) {
	if !p.driver.End().IsZero() && now.After(p.driver.End()) {
		now = p.driver.End()
	}
	if err := p.runner.Advance(ctx, now); err != nil && p.err == nil {
		p.err = err
	}
}

// barrier makes a pass wait for ingest to store what the fleet had published when
// the pass fell due, and never more than passWait.
func (p *passes) barrier(driver *sim.Driver, ing *ingest.Ingester) clock.Barrier {
	stored := func() uint64 { st := ing.Stats(); return st.RowsInserted + st.DedupHits }
	return func(time.Time) clock.Wait {
		pub := driver.Published()
		rows := pub.GPURows + pub.ProcessRows + driver.JobEvents()
		return func(ctx context.Context) error {
			deadline := time.Now().Add(passWait)
			for stored() < rows {
				if time.Now().After(deadline) {
					p.waited++
					return nil
				}
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(5 * time.Millisecond):
				}
			}
			return nil
		}
	}
}

// finish runs the passes left once the fleet has stopped and ingest has caught
// up, and a last pass at the end of the run if it is not a pass time.
func (p *passes) finish(ctx context.Context, end time.Time, prog *reports.Progress) error {
	if p.err != nil {
		return fmt.Errorf("demo: analyzer pass: %w", p.err)
	}
	prog.Update("finishing analyzer passes: "+p.progress(), true)
	defer prog.Done()
	return p.runner.Finish(ctx, end)
}

// stop ends the passes (after an error: finish was not reached). Inline passes
// have nothing running of their own.
func (p *passes) stop() { p.runner.Stop() }

// progress is the analyzer's part of the status line.
func (p *passes) progress() string {
	if p == nil {
		return ""
	}
	st := p.runner.Stats()
	s := fmt.Sprintf("analyzer passes %d", st.Passes)
	if !st.Last.IsZero() {
		s += " (at " + st.Last.UTC().Format("15:04") + ")"
	}
	return s
}

// line says how the passes went.
func (p *passes) line() string {
	st := p.runner.Stats()
	s := fmt.Sprintf("Analyzer: %d passes on simulated time, every %s (in lockstep with the fleet, %d failed), %s of wall time in all.",
		st.Passes, p.every, st.Failed, st.Took.Round(100*time.Millisecond))
	if p.loop != nil {
		s = strings.TrimSuffix(s, ".") + fmt.Sprintf(", %s of it the scheduler's.", p.loopTook.Round(100*time.Millisecond))
	}
	if p.waited > 0 {
		s += fmt.Sprintf(" %d ran before ingest had stored their data (after %s).", p.waited, passWait)
	}
	return s
}

// summary is the analyzer's tables for the run: findings by kind and cost by team.
func (p *passes) summary(ctx context.Context, start, end time.Time) ([]summary.Section, error) {
	fs, err := p.svc.Findings(ctx, start, end)
	if err != nil {
		return nil, err
	}
	rows, err := chargeback.Compute(ctx, p.st, start, end)
	if err != nil {
		return nil, err
	}
	return summary.Analyzer(fs, rows), nil
}

// quiet is log at warnings and above.
func quiet(log *slog.Logger) *slog.Logger {
	return slog.New(minLevel{Handler: log.Handler(), min: slog.LevelWarn})
}

// minLevel passes on records at min or above: the demo's passes log warnings only
// while the status line is drawn.
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{Handler: h.Handler.WithAttrs(as), min: h.min}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{Handler: h.Handler.WithGroup(name), min: h.min}
}
