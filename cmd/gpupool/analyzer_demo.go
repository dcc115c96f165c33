package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpupool/gpupool/analyzer"
	"github.com/gpupool/gpupool/analyzer/chargeback"
	"github.com/gpupool/gpupool/analyzer/findings"
	"github.com/gpupool/gpupool/ingest"
	"github.com/gpupool/gpupool/internal/config"
	"github.com/gpupool/gpupool/store"
)

// demoSection is one table of the demo's summary.
type demoSection struct {
	title string
	res   *store.Result
}

// demoAnalyzer runs analyzer passes on the demo's simulated clock, beside the
// fleet: when the fleet passes a pass time, the pass waits until ingest has
// stored everything published up to then, and runs at that simulated time. Passes
// run one after another in their own goroutine, so the fleet never waits for them.
// A pass costs about a second of wall time while a day is simulated in a minute,
// so when passes fall behind the fleet the analyzer skips to the latest pass time
// due (a pass judges the windows ending at its time, so a skipped pass loses only
// conditions that came and went between two passes); a last pass runs at the end
// of the run. The demo's wall time stays that of the fleet.
type demoAnalyzer struct {
	svc    *analyzer.Service
	st     store.Store
	every  time.Duration
	driver *fleetDriver
	ing    *ingest.Ingester
	log    *slog.Logger

	marks  chan passMark
	done   chan struct{}
	cancel context.CancelFunc
	next   time.Time // next pass time; the driver goroutine's (onTick)
	closed bool

	passes, failed, skipped atomic.Int64
	lastAtMs                atomic.Int64
	mu                      sync.Mutex
	took                    time.Duration
}

// passMark is a pass due: its simulated time and the rows published by then.
type passMark struct {
	at   time.Time
	rows uint64
}

// startDemoAnalyzer seeds an empty price book, creates the analyzer service and
// starts its pass loop; the fleet driver tells it when simulated time passes a
// pass time.
func startDemoAnalyzer(ctx context.Context, c config.Config, st store.Store, b *busConn, driver *fleetDriver,
	ing *ingest.Ingester, reg prometheus.Registerer, log *slog.Logger) (*demoAnalyzer, error) {
	prices, err := readPriceBook(c.Analyzer.PriceBook)
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
	alog := log
	if c.LogLevel == "info" {
		alog = newLogger("warn") // a log line per pass would break the progress line
	}
	svc, err := analyzer.New(c.Analyzer, st, analyzer.WithPublisher(findings.JetStreamPublisher{JS: b.js}),
		analyzer.WithMetrics(analyzer.NewMetrics(reg)), analyzer.WithLogger(alog))
	if err != nil {
		return nil, err
	}
	every := c.Analyzer.Interval
	n := 16
	if !driver.end.IsZero() {
		n = int(driver.end.Sub(driver.start)/every) + 2
	}
	a := &demoAnalyzer{
		svc: svc, st: st, every: every, driver: driver, ing: ing, log: log,
		marks: make(chan passMark, n), done: make(chan struct{}), next: driver.start.Add(every),
	}
	driver.onTick = a.onTick
	actx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	go a.run(actx)
	return a, nil
}

// onTick is called by the fleet driver after each tick: it queues the passes whose
// time the fleet has reached, with what had been published by then.
func (a *demoAnalyzer) onTick(now time.Time) {
	for !now.Before(a.next) && (a.driver.end.IsZero() || !a.next.After(a.driver.end)) {
		pub := a.driver.published()
		m := passMark{at: a.next, rows: pub.GPURows + pub.ProcessRows + a.driver.jobs.count.Load()}
		select {
		case a.marks <- m:
		default:
			a.log.Warn("analyzer is behind the fleet; pass skipped", "at", m.at)
		}
		a.next = a.next.Add(a.every)
	}
}

// stored is what ingest has stored (or found stored already).
func (a *demoAnalyzer) stored() uint64 {
	st := a.ing.Stats()
	return st.RowsInserted + st.DedupHits
}

func (a *demoAnalyzer) run(ctx context.Context) {
	defer close(a.done)
	for {
		var m passMark
		var ok bool
		select {
		case <-ctx.Done():
			return
		case m, ok = <-a.marks:
			if !ok {
				return
			}
		}
		// Behind the fleet: skip to the latest pass time due.
		for more := true; more; {
			select {
			case later, ok := <-a.marks:
				if !ok {
					more = false
					break
				}
				m = later
				a.skipped.Add(1)
			default:
				more = false
			}
		}
		// Wait for ingest to store the pass's data (a second or so behind the
		// fleet); a pass is never held back more than half a minute.
		deadline := time.Now().Add(30 * time.Second)
		for a.stored() < m.rows && time.Now().Before(deadline) {
			select {
			case <-ctx.Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
		a.pass(ctx, m.at)
	}
}

func (a *demoAnalyzer) pass(ctx context.Context, at time.Time) {
	res, err := a.svc.Pass(ctx, at)
	a.passes.Add(1)
	if err != nil && ctx.Err() == nil {
		a.failed.Add(1)
		a.log.Warn("analyzer pass failed", "at", at, "err", err)
	}
	a.lastAtMs.Store(at.UnixMilli())
	a.mu.Lock()
	a.took += res.Took
	a.mu.Unlock()
}

// finish runs the passes still queued once the fleet has stopped and ingest has
// caught up, and a last pass at the end of the run if it is not a pass time.
func (a *demoAnalyzer) finish(ctx context.Context, end time.Time, prog *progress) error {
	if !a.closed {
		a.closed = true
		close(a.marks)
	}
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for waiting := true; waiting; {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-a.done:
			waiting = false
		case <-t.C:
			prog.update("finishing analyzer passes: "+a.progress(), false)
		}
	}
	prog.done()
	if last := time.UnixMilli(a.lastAtMs.Load()); a.passes.Load() == 0 || last.Before(end) {
		pctx, cancel := context.WithCancel(ctx)
		defer cancel()
		a.pass(pctx, end)
	}
	return nil
}

// stop ends the pass loop (after an error: finish was not reached).
func (a *demoAnalyzer) stop() {
	a.cancel()
	<-a.done
}

// progress is the analyzer's part of the progress line.
func (a *demoAnalyzer) progress() string {
	if a == nil {
		return ""
	}
	s := fmt.Sprintf("analyzer passes %d", a.passes.Load())
	if ms := a.lastAtMs.Load(); ms > 0 {
		s += " (at " + time.UnixMilli(ms).UTC().Format("15:04") + ")"
	}
	return s
}

// passLine says how the passes went.
func (a *demoAnalyzer) passLine() string {
	a.mu.Lock()
	took := a.took
	a.mu.Unlock()
	return fmt.Sprintf("Analyzer: %d passes on simulated time, every %s or later when behind (%d skipped, %d failed), %s of wall time in all.",
		a.passes.Load(), a.every, a.skipped.Load(), a.failed.Load(), took.Round(100*time.Millisecond))
}

// summary is the analyzer's tables for the run: findings by kind and cost by team.
func (a *demoAnalyzer) summary(ctx context.Context, start, end time.Time) ([]demoSection, error) {
	fs, err := a.svc.Findings(ctx, start, end)
	if err != nil {
		return nil, err
	}
	rows, err := chargeback.Compute(ctx, a.st, start, end)
	if err != nil {
		return nil, err
	}
	return []demoSection{
		{"Findings by kind (episodes opened during the run; waste from each condition's start to the last pass that saw it, at the price book's rate)", findingsByKind(fs)},
		{"Cost by team (chargeback: GPU-hours held × the card type's price; idle = held while the GPU was not active)", costByTeam(rows)},
	}, nil
}
