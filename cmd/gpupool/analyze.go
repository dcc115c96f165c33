package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/gpupool/gpupool/analyzer"
	"github.com/gpupool/gpupool/analyzer/traceanalysis"
	"github.com/gpupool/gpupool/internal/config"
	"github.com/gpupool/gpupool/reports"
	"github.com/gpupool/gpupool/reports/summary"
)

// AnalyzeCmd runs a trace through ingest and the analyzer in a temporary embedded
// store, on the trace's own clock, and prints what it found and what it cost.
type AnalyzeCmd struct {
	Trace         string        `required:"" type:"existingfile" help:"Trace to analyse (JSON Lines, optionally gzip; see TRACE_FORMAT.md)."`
	Format        string        `short:"f" help:"Output: table or json (one JSON object: findings, chargeback, price_problems, trace)." enum:"table,json" default:"table"`
	Interval      time.Duration `help:"Trace time between analyzer passes (default analyzer.interval)."`
	SkipBadLines  bool          `help:"Skip lines that break the trace format (reported on stderr) instead of stopping at the first."`
	ReorderWindow time.Duration `help:"How far in trace time a line may come out of order and be put in place; a line further back is late (refused, or dropped and counted with --skip-bad-lines)." default:"5m"`
	FutureSkew    time.Duration `help:"How far a line may lie after the trace's clock (the latest time of the lines before it) unless the lines after it follow; a line further ahead is in the future (refused, or dropped and counted with --skip-bad-lines)." default:"1h"`
	Truth         string        `type:"existingfile" help:"Truth file (JSON Lines of kind, job, start, end; docs/analyzer.md): print precision, recall and coverage per kind after the report."`

	out    io.Writer // stdout unless a test sets it
	errOut io.Writer // stderr unless a test sets it
}

// Run loads the trace, runs the passes and prints the report.
func (a *AnalyzeCmd) Run(g *Globals, ctx context.Context) error {
	c, _, err := g.setup(func(c *config.Config) {
		if a.Interval > 0 {
			c.Analyzer.Interval = a.Interval
		}
	})
	if err != nil {
		return err
	}
	errOut := a.errOut
	if errOut == nil {
		errOut = os.Stderr
	}
	log := slog.New(slog.NewTextHandler(errOut, &slog.HandlerOptions{Level: c.QuietLevel(slog.LevelWarn)}))
	cfg := traceanalysis.DefaultConfig()
	cfg.Analyzer, cfg.Store, cfg.File, cfg.SkipBadLines = c.Analyzer, c.Store.CHDB, a.Trace, a.SkipBadLines
	if a.ReorderWindow > 0 {
		cfg.ReorderWindow = a.ReorderWindow
	}
	if a.FutureSkew > 0 {
		cfg.FutureSkew = a.FutureSkew
	}
	if cfg.Prices, err = analyzer.ReadPriceBook(c.Analyzer.PriceBook); err != nil {
		return err
	}
	f, err := os.Open(a.Trace)
	if err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	defer f.Close()
	size := int64(0)
	if fi, err := f.Stat(); err == nil {
		size = fi.Size()
	}
	prog := reports.NewProgressLines(errOut, 5*time.Second)
	if errOut == os.Stderr {
		prog = reports.NewProgress(os.Stderr)
	}
	an, err := traceanalysis.New(cfg, traceanalysis.WithLogger(log), traceanalysis.WithProgress(summary.TraceProgress(prog, size)))
	if err != nil {
		return err
	}
	rep, err := an.Run(ctx, f)
	prog.Done()
	if err != nil {
		return fmt.Errorf("analyze %s: %w", a.Trace, err)
	}
	if err := summary.PrintTrace(stdout(a.out), errOut, rep, a.Format); err != nil || a.Truth == "" {
		return err
	}
	tf, err := os.Open(a.Truth)
	if err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	defer tf.Close()
	truth, err := traceanalysis.ReadTruth(tf)
	if err != nil {
		return fmt.Errorf("analyze %s: %w", a.Truth, err)
	}
	return traceanalysis.WriteScore(errOut, traceanalysis.Score(rep.Findings, truth, traceanalysis.Windows(c.Analyzer.Findings), rep.Trace.End))
}
