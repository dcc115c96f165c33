package demo

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpupool/gpupool/analyzer"
	"github.com/gpupool/gpupool/analyzer/chargeback"
	"github.com/gpupool/gpupool/analyzer/clock"
	"github.com/gpupool/gpupool/analyzer/findings"
	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/collector/sim"
	"github.com/gpupool/gpupool/ingest"
	"github.com/gpupool/gpupool/internal/config"
	"github.com/gpupool/gpupool/reports"
	"github.com/gpupool/gpupool/reports/summary"
	"github.com/gpupool/gpupool/store"
)

// passWait is the longest a pass waits for ingest to store its data.
const passWait = 30 * time.Second

// passes runs analyzer passes on the demo's simulated clock, beside the fleet
// (analyzer/clock in background mode): when the fleet passes a pass time, the
// pass waits until ingest has stored everything published up to then, and runs
// at that simulated time, in the runner's goroutine, so the fleet never waits for
// it. A pass costs about a second of wall time while a day is simulated in a
// minute, so when passes fall behind the fleet the runner skips to the latest pass
// time due; a last pass runs at the end of the run. The demo's wall time stays
// that of the fleet.
type passes struct {
	svc    *analyzer.Service
	st     store.Store
	every  time.Duration
	runner *clock.Runner
}

// startPasses seeds an empty price book, creates the analyzer service and starts
// its passes; the fleet driver tells them when simulated time moves on.
func startPasses(ctx context.Context, c config.Config, st store.Store, b *bus.Conn, driver *sim.Driver,
	ing *ingest.Ingester, reg prometheus.Registerer, log *slog.Logger) (*passes, error) {
	prices, err := analyzer.ReadPriceBook(c.Analyzer.PriceBook)
	if err != nil {
		return nil, err
	}
	empty, err := analyzer.PriceBookEmpty(ctx, st)
	if err != nil {
		return nil, err
	}
	if empty {
		if _, err := analyzer.LoadPriceBook(ctx, st, prices); err != nil {
			return nil, err
		}
	}
	// A log line per pass would break the status line: at the default level the
	// passes log warnings and errors only.
	alog := log
	if c.LogLevel == "info" {
		alog = slog.New(minLevel{Handler: log.Handler(), min: slog.LevelWarn})
	}
	svc, err := analyzer.New(c.Analyzer, st, analyzer.WithPublisher(findings.JetStreamPublisher{JS: b.JS}),
		analyzer.WithMetrics(analyzer.NewMetrics(reg)), analyzer.WithLogger(alog))
	if err != nil {
		return nil, err
	}
	runner, err := clock.New(clock.Config{Interval: c.Analyzer.Interval, Start: driver.Start()}, svc.RunPass, barrier(driver, ing), clock.WithLogger(log))
	if err != nil {
		return nil, err
	}
	runner.Start(ctx)
	driver.OnTick(func(now time.Time) {
		if !driver.End().IsZero() && now.After(driver.End()) {
			now = driver.End()
		}
		_ = runner.Advance(ctx, now) // background mode: it only queues
	})
	return &passes{svc: svc, st: st, every: c.Analyzer.Interval, runner: runner}, nil
}

// barrier makes a pass wait for ingest to store what the fleet had published when
// the pass fell due (a second or so behind the fleet), and never more than
// passWait.
func barrier(driver *sim.Driver, ing *ingest.Ingester) clock.Barrier {
	stored := func() uint64 { st := ing.Stats(); return st.RowsInserted + st.DedupHits }
	return func(time.Time) clock.Wait {
		pub := driver.Published()
		rows := pub.GPURows + pub.ProcessRows + driver.JobEvents()
		return func(ctx context.Context) error {
			deadline := time.Now().Add(passWait)
			for stored() < rows && time.Now().Before(deadline) {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(20 * time.Millisecond):
				}
			}
			return nil
		}
	}
}

// finish runs the passes still queued once the fleet has stopped and ingest has
// caught up, and a last pass at the end of the run if it is not a pass time.
func (p *passes) finish(ctx context.Context, end time.Time, prog *reports.Progress) error {
	done := make(chan error, 1)
	go func() { done <- p.runner.Finish(ctx, end) }()
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case err := <-done:
			prog.Done()
			return err
		case <-t.C:
			prog.Update("finishing analyzer passes: "+p.progress(), false)
		}
	}
}

// stop ends the passes (after an error: finish was not reached).
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
	return fmt.Sprintf("Analyzer: %d passes on simulated time, every %s or later when behind (%d skipped, %d failed), %s of wall time in all.",
		st.Passes, p.every, st.Skipped, st.Failed, st.Took.Round(100*time.Millisecond))
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
