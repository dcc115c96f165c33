package main

import (
	"context"
	"encoding/json"
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
	Trace        string        `required:"" type:"existingfile" help:"Trace to analyse (JSON Lines, optionally gzip; see TRACE_FORMAT.md)."`
	Format       string        `short:"f" help:"Output: table or json (one JSON object: findings, chargeback, price_problems, trace)." enum:"table,json" default:"table"`
	Interval     time.Duration `help:"Trace time between analyzer passes (default analyzer.interval)."`
	SkipBadLines bool          `help:"Skip lines that break the trace format (reported on stderr) instead of stopping at the first."`

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
	log := slog.New(slog.NewTextHandler(errOut, &slog.HandlerOptions{Level: logLevel(c.LogLevel, slog.LevelWarn)}))
	cfg := traceanalysis.DefaultConfig()
	cfg.Analyzer, cfg.Store, cfg.File, cfg.SkipBadLines = c.Analyzer, c.Store.CHDB, a.Trace, a.SkipBadLines
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
	an, err := traceanalysis.New(cfg, traceanalysis.WithLogger(log), traceanalysis.WithProgress(traceProgress(prog, size)))
	if err != nil {
		return err
	}
	rep, err := an.Run(ctx, f)
	prog.Done()
	if err != nil {
		return fmt.Errorf("analyze %s: %w", a.Trace, err)
	}
	return a.print(rep, errOut)
}

// traceProgress draws the analysis's progress on prog; size is the trace's.
func traceProgress(prog *reports.Progress, size int64) func(traceanalysis.Progress) {
	return func(p traceanalysis.Progress) {
		frac := 1.0
		if !p.Done {
			frac = 0
			if size > 0 {
				frac = float64(p.BytesRead) / float64(size)
			}
		}
		prog.Update(fmt.Sprintf("%s %3.0f%%  trace %s  rows %s  passes %d", reports.Bar(frac), frac*100,
			p.At.Format("2006-01-02 15:04"), reports.Count(p.Rows), p.Passes), p.Done)
	}
}

// print writes the report's warnings on errOut and the report in the format asked.
func (a *AnalyzeCmd) print(rep *traceanalysis.Report, errOut io.Writer) error {
	for _, le := range rep.LineErrors {
		fmt.Fprintf(errOut, "warning: skipped %s\n", le.Error())
	}
	if n := rep.Trace.DuplicateRecords; n > 0 {
		fmt.Fprintf(errOut, "warning: %d duplicate record(s) (the same GPU, process or job event at the same time) were counted once\n", n)
	}
	for _, p := range rep.PriceProblems {
		fmt.Fprintf(errOut, "warning: price book: %s\n", p)
	}
	out := stdout(a.out)
	if a.Format == reports.FormatJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return summary.WriteTrace(out, rep)
}

// logLevel parses a configured level, defaulting to def when it is info (the
// configuration's default): a CLI that prints a report keeps stderr for warnings.
func logLevel(s string, def slog.Level) slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil || l == slog.LevelInfo {
		return def
	}
	return l
}
