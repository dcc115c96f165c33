package traceanalysis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/gpupool/gpupool/analyzer"
	"github.com/gpupool/gpupool/analyzer/chargeback"
	"github.com/gpupool/gpupool/analyzer/clock"
	"github.com/gpupool/gpupool/analyzer/pricebook"
	"github.com/gpupool/gpupool/collector/replay"
	"github.com/gpupool/gpupool/ingest"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/schemas/trace"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb"
)

// loaderBatchRows is how many rows the loader buffers before an insert.
const loaderBatchRows = 200000

// rawTTLDays keeps a trace's samples ten years: a trace may be old (a longer TTL
// would overflow DateTime past 2106 and delete them at once).
const rawTTLDays = 3650

// Analysis analyses traces with one configuration.
type Analysis struct {
	cfg      Config
	log      *slog.Logger
	progress func(Progress)
	// pass, when set, runs instead of the analyzer's pass (tests that count
	// the passes a trace causes without paying for them).
	pass clock.Pass
}

// Option changes how New builds an Analysis.
type Option func(*Analysis)

// WithLogger sets the logger of the store, the analyzer and the passes (default:
// discard).
func WithLogger(l *slog.Logger) Option { return func(a *Analysis) { a.log = l } }

// WithProgress sets a function called after each tick of the trace is loaded and
// once at the end (Progress.Done), in Run's goroutine.
func WithProgress(f func(Progress)) Option { return func(a *Analysis) { a.progress = f } }

// New returns an Analysis with cfg.
func New(cfg Config, opts ...Option) (*Analysis, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("traceanalysis: invalid config: %w", err)
	}
	a := &Analysis{cfg: cfg}
	for _, o := range opts {
		o(a)
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if a.progress == nil {
		a.progress = func(Progress) {}
	}
	return a, nil
}

// Run reads the trace from r into a temporary store, runs the passes due on its
// clock and reports what they found. A line that breaks the trace format stops
// it (its error names the line) unless Config.SkipBadLines; a trace without
// records is ErrNoRecords.
func (a *Analysis) Run(ctx context.Context, r io.Reader) (*Report, error) {
	counted := &countingReader{r: r}
	rd := trace.NewReader(counted, trace.ReaderOptions{Strict: !a.cfg.SkipBadLines, ReorderWindow: a.cfg.ReorderWindow, FutureSkew: a.cfg.FutureSkew})
	player, err := replay.New(rd, replay.DefaultConfig())
	if err != nil {
		return nil, err
	}
	// A temporary embedded store: the engine serves one data path per process,
	// which a command that exits after one trace can spend on its own directory.
	dir, err := os.MkdirTemp("", "gpupool-analyze-")
	if err != nil {
		return nil, fmt.Errorf("temporary store: %w", err)
	}
	defer os.RemoveAll(dir)
	st, err := a.openStore(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	svc, err := analyzer.New(a.cfg.Analyzer, st, analyzer.WithLogger(a.log))
	if err != nil {
		return nil, err
	}
	span, err := a.replay(ctx, player, counted, st, svc)
	if oe := (*trace.OrderError)(nil); errors.As(err, &oe) {
		return nil, fmt.Errorf("%w (--skip-bad-lines drops them and bills the rest, reported; --reorder-window %s and --future-skew %s widen the bounds)", err, a.cfg.ReorderWindow, a.cfg.FutureSkew)
	}
	if err != nil {
		return nil, err
	}
	ost := rd.OrderStats()
	span.ReorderedLines, span.LateLines, span.FutureLines, span.InvalidLines = ost.Reordered, ost.Late, ost.Future, ost.Invalid
	return a.report(ctx, st, svc, span, player.Errors())
}

// openStore opens the embedded store on dir, migrates it and loads the price book.
func (a *Analysis) openStore(ctx context.Context, dir string) (*chdb.Store, error) {
	cfg := a.cfg.Store
	cfg.Path, cfg.ReadOnly = dir, false
	st, err := chdb.Open(cfg, chdb.WithLogger(a.log))
	if err != nil {
		return nil, err
	}
	if _, err := store.Migrate(ctx, st, schemas.MigrationParams{DB: cfg.Database, RawTTLDays: rawTTLDays}); err != nil {
		st.Close()
		return nil, err
	}
	if _, err := pricebook.Load(ctx, st, a.cfg.Prices); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

// replay loads the trace tick by tick, running the passes due before each tick
// (over what was loaded, which is everything up to them), then the passes left
// up to its end.
func (a *Analysis) replay(ctx context.Context, player *replay.Player, counted *countingReader, st store.Store, svc *analyzer.Service) (Span, error) {
	loader := ingest.NewLoader(st, loaderBatchRows)
	flush := func(time.Time) clock.Wait { return loader.Flush }
	pass := svc.RunPass
	if a.pass != nil {
		pass = a.pass
	}
	passes, err := clock.New(clock.Config{Interval: a.cfg.Analyzer.Interval, GapLimit: a.cfg.GapLimit}, pass, flush, clock.WithLogger(a.log))
	if err != nil {
		return Span{}, err
	}
	span := Span{File: a.cfg.File, IntervalSeconds: a.cfg.Analyzer.Interval.Seconds()}
	for {
		tick, err := player.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return span, err
		}
		if err := loadTick(ctx, passes, loader, tick); err != nil {
			return span, fmt.Errorf("at %s: %w", tick.At.Format(time.RFC3339), err)
		}
		if span.Start.IsZero() {
			span.Start = tick.At
		}
		span.End = maxTime(span.End, tick.At)
		ps := player.Stats()
		a.progress(Progress{BytesRead: counted.n.Load(), At: tick.At, Rows: ps.GPURows + ps.ProcessRows + ps.JobEvents, Passes: passes.Stats().Passes})
	}
	if span.Start.IsZero() {
		ps := player.Stats()
		if errs := player.Errors(); ps.SkippedLines > 0 && len(errs) > 0 {
			return span, fmt.Errorf("%w: all %d lines read were skipped as bad (a binary file, or not a trace?); the first: %w", ErrNoRecords, ps.SkippedLines, &errs[0])
		}
		return span, ErrNoRecords
	}
	if err := passes.Finish(ctx, span.End); err != nil {
		return span, err
	}
	ps := player.Stats()
	span.Passes = passes.Stats().Passes
	span.GPURows, span.ProcessRows, span.JobEvents, span.SkippedLines = ps.GPURows, ps.ProcessRows, ps.JobEvents, ps.SkippedLines
	span.DuplicateRecords = ps.DuplicateRecords
	a.progress(Progress{BytesRead: counted.n.Load(), At: span.End, Rows: ps.GPURows + ps.ProcessRows + ps.JobEvents, Passes: span.Passes, Done: true})
	return span, nil
}

// loadTick runs the passes due before the tick, then loads its rows.
func loadTick(ctx context.Context, passes *clock.Runner, loader *ingest.Loader, tick replay.Tick) error {
	if err := passes.Advance(ctx, tick.At); err != nil {
		return err
	}
	if err := loader.AddJobs(ctx, tick.Jobs); err != nil {
		return err
	}
	for _, b := range tick.Batches {
		if err := loader.AddSamples(ctx, b); err != nil {
			return err
		}
	}
	return nil
}

// report reads what the passes wrote: the findings that opened during the trace,
// its chargeback and the price book's problems.
func (a *Analysis) report(ctx context.Context, st store.Store, svc *analyzer.Service, span Span, skipped []trace.LineError) (*Report, error) {
	rep := &Report{Trace: span, LineErrors: skipped}
	var err error
	if rep.Findings, err = svc.Findings(ctx, span.Start, span.End); err != nil {
		return nil, err
	}
	// Chargeback up to the end of the last sample's interval: a GPU sampled at
	// the end was held then.
	if rep.Chargeback, err = chargeback.Compute(ctx, st, span.Start, span.End.Add(time.Millisecond)); err != nil {
		return nil, err
	}
	if rep.Chargeback, err = a.refuseNoTeam(rep, rep.Chargeback); err != nil {
		return nil, err
	}
	if rep.PriceProblems, err = pricebook.Check(ctx, st, span.Start, span.End.Add(time.Millisecond)); err != nil {
		return nil, err
	}
	if rep.Findings == nil {
		rep.Findings = []schemas.Finding{}
	}
	if rep.Chargeback == nil {
		rep.Chargeback = []chargeback.Row{}
	}
	if rep.PriceProblems == nil {
		rep.PriceProblems = []pricebook.Problem{}
	}
	return rep, nil
}

// refuseNoTeam keeps a job no event of which names a team out of the bill: a
// trace holding one is refused, or with SkipBadLines its rows are left out and
// the job named in the report. Billing it to team "" would hand finance a row
// no team owns.
func (a *Analysis) refuseNoTeam(rep *Report, rows []chargeback.Row) ([]chargeback.Row, error) {
	kept := rows[:0]
	for _, r := range rows {
		if r.Team != "" {
			kept = append(kept, r)
			continue
		}
		if n := len(rep.JobsWithoutTeam); n == 0 || rep.JobsWithoutTeam[n-1] != r.Job {
			rep.JobsWithoutTeam = append(rep.JobsWithoutTeam, r.Job)
		}
	}
	rep.Trace.NoTeamJobs = len(rep.JobsWithoutTeam)
	if n := rep.Trace.NoTeamJobs; n > 0 && !a.cfg.SkipBadLines {
		return nil, fmt.Errorf("%w: %d jobs held GPUs but no event of theirs names a team (the first: %s); a job is billed to its team (--skip-bad-lines leaves them out of the bill, reported)", ErrNoTeam, n, rep.JobsWithoutTeam[0])
	}
	return kept, nil
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// countingReader counts the bytes read through it (for progress).
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n.Add(int64(n))
	return n, err
}
