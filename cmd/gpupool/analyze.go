package main

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/gpupool/gpupool/analyzer/pricebook"
	"github.com/gpupool/gpupool/internal/config"
	"github.com/gpupool/gpupool/internal/summary"
	"github.com/gpupool/gpupool/internal/traceanalysis"
)

// AnalyzeCmd runs a trace through ingest and the analyzer in a temporary embedded
// store, on the trace's own clock, and prints what it found and what it cost.
type AnalyzeCmd struct {
	Trace         string        `required:"" type:"existingfile" help:"Trace to analyse (JSON Lines, optionally gzip; see docs/trace-format.md)."`
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
		setPositive(&c.Analyzer.Interval, a.Interval)
	})
	if err != nil {
		return err
	}
	errOut := stderr(a.errOut)
	log := slog.New(slog.NewTextHandler(errOut, &slog.HandlerOptions{Level: c.QuietLevel(slog.LevelWarn)}))
	cfg := traceanalysis.DefaultConfig()
	cfg.Analyzer, cfg.Store, cfg.File, cfg.SkipBadLines = c.Analyzer, c.Store.CHDB, a.Trace, a.SkipBadLines
	setPositive(&cfg.ReorderWindow, a.ReorderWindow)
	setPositive(&cfg.FutureSkew, a.FutureSkew)
	if cfg.Prices, err = pricebook.Read(c.Analyzer.PriceBook); err != nil {
		return err
	}
	rep, err := summary.AnalyzeFile(ctx, cfg, a.Trace, errOut, log)
	if err != nil {
		return err
	}
	if err := summary.PrintTrace(stdout(a.out), errOut, rep, a.Format); err != nil || a.Truth == "" {
		return err
	}
	return traceanalysis.ScoreTruthFile(errOut, a.Truth, rep, c.Analyzer.Findings)
}
