package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/gpupool/gpupool/analyzer"
	"github.com/gpupool/gpupool/analyzer/chargeback"
	"github.com/gpupool/gpupool/collector/replay"
	"github.com/gpupool/gpupool/ingest"
	"github.com/gpupool/gpupool/reports"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/schemas/trace"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb"
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

// analyzeReport is the JSON output of gpupool analyze. The names of findings' and
// chargeback rows' fields are a public contract (schemas.Finding, chargeback.Row).
type analyzeReport struct {
	Trace         traceSpan                 `json:"trace"`
	Findings      []schemas.Finding         `json:"findings"`
	Chargeback    []chargeback.Row          `json:"chargeback"`
	PriceProblems []chargeback.PriceProblem `json:"price_problems"`
}

// traceSpan describes what was read and analysed.
type traceSpan struct {
	File         string    `json:"file"`
	Start        time.Time `json:"start"`
	End          time.Time `json:"end"`
	GPURows      uint64    `json:"gpu_rows"`
	ProcessRows  uint64    `json:"process_rows"`
	JobEvents    uint64    `json:"job_events"`
	SkippedLines int       `json:"skipped_lines"`
	Passes       int       `json:"passes"`
	// IntervalSeconds is the trace time between passes.
	IntervalSeconds float64 `json:"interval_seconds"`
}

// Run loads the trace, runs the passes and prints the report.
func (a *AnalyzeCmd) Run(g *Globals, ctx context.Context) error {
	c, err := g.loadConfig()
	if err != nil {
		return err
	}
	if a.Interval > 0 {
		c.Analyzer.Interval = a.Interval
	}
	if err := g.finish(&c); err != nil {
		return err
	}
	errOut := a.errOut
	if errOut == nil {
		errOut = os.Stderr
	}
	log := slog.New(slog.NewTextHandler(errOut, &slog.HandlerOptions{Level: logLevel(c.LogLevel, slog.LevelWarn)}))
	prices, err := readPriceBook(c.Analyzer.PriceBook)
	if err != nil {
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
	counted := &countingReader{r: f}
	player, err := replay.New(trace.NewReader(counted, trace.ReaderOptions{Strict: !a.SkipBadLines}), replay.DefaultConfig())
	if err != nil {
		return err
	}

	// A temporary embedded store: the engine serves one data path per process,
	// which a command that exits after one trace can spend on its own directory.
	dir, err := os.MkdirTemp("", "gpupool-analyze-")
	if err != nil {
		return fmt.Errorf("analyze: temporary store: %w", err)
	}
	defer os.RemoveAll(dir)
	cfg := c.Store.CHDB
	cfg.Path, cfg.ReadOnly = dir, false
	st, err := chdb.Open(cfg, log)
	if err != nil {
		return err
	}
	defer st.Close()
	// A trace may be old: keep its samples for ten years (a longer TTL would
	// overflow DateTime past 2106 and delete them at once).
	if _, err := store.Migrate(ctx, st, schemas.MigrationParams{DB: cfg.Database, RawTTLDays: 3650}); err != nil {
		return err
	}
	if _, err := analyzer.LoadPriceBook(ctx, st, prices); err != nil {
		return err
	}
	svc, err := analyzer.New(c.Analyzer, st, nil, nil, log)
	if err != nil {
		return err
	}

	prog := &progress{w: errOut, every: 5 * time.Second}
	if errOut == os.Stderr {
		prog = newProgress(os.Stderr)
	}
	span := traceSpan{File: a.Trace, IntervalSeconds: c.Analyzer.Interval.Seconds()}
	run := &tracePasses{svc: svc, loader: ingest.NewLoader(st, 200000), interval: c.Analyzer.Interval, log: log}
	for {
		tick, err := player.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			prog.done()
			return fmt.Errorf("analyze %s: %w", a.Trace, err)
		}
		if err := run.tick(ctx, tick); err != nil {
			prog.done()
			return fmt.Errorf("analyze %s: at %s: %w", a.Trace, tick.At.Format(time.RFC3339), err)
		}
		frac := 0.0
		if size > 0 {
			frac = float64(counted.n.Load()) / float64(size)
		}
		st := player.Stats()
		prog.update(fmt.Sprintf("%s %3.0f%%  trace %s  rows %s  passes %d", bar(frac), frac*100,
			tick.At.Format("2006-01-02 15:04"), count(st.GPURows+st.ProcessRows+st.JobEvents), run.passes), false)
	}
	if run.start.IsZero() {
		prog.done()
		return fmt.Errorf("analyze %s: the trace has no records", a.Trace)
	}
	if err := run.finish(ctx); err != nil {
		prog.done()
		return fmt.Errorf("analyze %s: %w", a.Trace, err)
	}
	ps := player.Stats()
	prog.update(fmt.Sprintf("%s 100%%  trace %s  rows %s  passes %d", bar(1), run.end.Format("2006-01-02 15:04"),
		count(ps.GPURows+ps.ProcessRows+ps.JobEvents), run.passes), true)
	prog.done()
	span.Start, span.End, span.Passes = run.start, run.end, run.passes
	span.GPURows, span.ProcessRows, span.JobEvents, span.SkippedLines = ps.GPURows, ps.ProcessRows, ps.JobEvents, ps.SkippedLines
	for _, le := range player.Errors() {
		fmt.Fprintf(errOut, "warning: skipped %s\n", le.Error())
	}

	rep := analyzeReport{Trace: span}
	if rep.Findings, err = svc.Findings(ctx, run.start, run.end); err != nil {
		return err
	}
	// Chargeback up to the end of the last sample's interval: a GPU sampled at
	// the end was held then.
	if rep.Chargeback, err = chargeback.Compute(ctx, st, run.start, run.end.Add(time.Millisecond)); err != nil {
		return err
	}
	if rep.PriceProblems, err = chargeback.CheckPriceBook(ctx, st, run.start, run.end.Add(time.Millisecond)); err != nil {
		return err
	}
	for _, p := range rep.PriceProblems {
		fmt.Fprintf(errOut, "warning: price book: %s\n", p)
	}
	if rep.Findings == nil {
		rep.Findings = []schemas.Finding{}
	}
	if rep.Chargeback == nil {
		rep.Chargeback = []chargeback.Row{}
	}
	if rep.PriceProblems == nil {
		rep.PriceProblems = []chargeback.PriceProblem{}
	}
	out := stdout(a.out)
	if a.Format == reports.FormatJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return writeAnalyzeTables(out, &rep)
}

// traceGap is how long after the trace's last record passes go on when the next
// record is further away: longer than every detector's window (2 h by default),
// so a condition at the end of a stretch is seen out.
const traceGap = 3 * time.Hour

// tracePasses loads ticks and runs the analyzer passes due on the trace's clock:
// at start+interval, start+2·interval, …, and at the end; in a gap of the trace
// longer than traceGap, only those up to traceGap after its last record.
type tracePasses struct {
	svc        *analyzer.Service
	loader     *ingest.Loader
	interval   time.Duration
	log        *slog.Logger
	start, end time.Time
	next       time.Time
	passes     int
}

// tick runs the passes due before t (over what was loaded, which is everything up
// to them), then loads t's rows.
func (p *tracePasses) tick(ctx context.Context, t replay.Tick) error {
	if p.start.IsZero() {
		p.start, p.next = t.At, t.At.Add(p.interval)
	}
	for t.At.After(p.next) {
		if p.next.After(p.end.Add(traceGap)) {
			// Nothing was recorded for a while (a trace of several stretches):
			// the passes after the last data have seen it out; go on at the
			// pass due just before the data resumes.
			p.next = p.next.Add(t.At.Sub(p.next) / p.interval * p.interval)
			if !t.At.After(p.next) {
				break
			}
		}
		if err := p.pass(ctx, p.next); err != nil {
			return err
		}
		p.next = p.next.Add(p.interval)
	}
	if t.At.After(p.end) {
		p.end = t.At
	}
	if err := p.loader.AddJobs(ctx, t.Jobs); err != nil {
		return err
	}
	for _, b := range t.Batches {
		if err := p.loader.AddSamples(ctx, b); err != nil {
			return err
		}
	}
	return nil
}

// finish runs the passes left up to the end of the trace, the last one at its end.
func (p *tracePasses) finish(ctx context.Context) error {
	last := time.Time{}
	for ; !p.next.After(p.end); p.next = p.next.Add(p.interval) {
		if err := p.pass(ctx, p.next); err != nil {
			return err
		}
		last = p.next
	}
	if last.Before(p.end) {
		return p.pass(ctx, p.end)
	}
	return nil
}

func (p *tracePasses) pass(ctx context.Context, at time.Time) error {
	if err := p.loader.Flush(ctx); err != nil {
		return err
	}
	p.passes++
	if _, err := p.svc.Pass(ctx, at); err != nil {
		// A pass that failed in part (one detector) still wrote the rest; the
		// report is made from what the passes wrote, so say so and go on.
		if ctx.Err() != nil {
			return ctx.Err()
		}
		p.log.Warn("analyzer pass failed in part", "at", at, "err", err)
	}
	return nil
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

// logLevel parses a configured level, defaulting to def when it is info (the
// configuration's default): a CLI that prints a report keeps stderr for warnings.
func logLevel(s string, def slog.Level) slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil || l == slog.LevelInfo {
		return def
	}
	return l
}

// writeAnalyzeTables prints the report as aligned tables.
func writeAnalyzeTables(w io.Writer, rep *analyzeReport) error {
	t := rep.Trace
	fmt.Fprintf(w, "Trace %s: %s → %s, %s GPU rows, %s process rows, %s job events; %d analyzer passes every %s\n",
		t.File, t.Start.Format(time.RFC3339), t.End.Format(time.RFC3339), count(t.GPURows), count(t.ProcessRows),
		count(t.JobEvents), t.Passes, time.Duration(t.IntervalSeconds*float64(time.Second)))
	sections := []struct {
		title string
		res   *store.Result
	}{
		{fmt.Sprintf("\nFindings (%d)", len(rep.Findings)), findingsTable(rep.Findings)},
		{"\nFindings by kind", findingsByKind(rep.Findings)},
		{"\nChargeback by job attempt and card type (GPU-hours; cost in the price book's currency)", chargebackTable(rep.Chargeback)},
		{"\nCost by team", costByTeam(rep.Chargeback)},
	}
	for _, s := range sections {
		fmt.Fprintln(w, s.title)
		if err := reports.WriteTable(w, s.res); err != nil {
			return err
		}
	}
	if len(rep.PriceProblems) > 0 {
		fmt.Fprintf(w, "\nPrice book problems (%d): see stderr and docs/finance.md\n", len(rep.PriceProblems))
	}
	return nil
}

func cols(spec ...string) []store.ColumnMeta {
	out := make([]store.ColumnMeta, 0, len(spec)/2)
	for i := 0; i+1 < len(spec); i += 2 {
		out = append(out, store.ColumnMeta{Name: spec[i], Type: spec[i+1]})
	}
	return out
}

// money is a cost cell: the figure, or "unpriced" (never a silent 0).
func money(v *float64) any {
	if v == nil {
		return "unpriced"
	}
	return round2(*v)
}

func round2(x float64) float64 { return math.Round(x*100) / 100 }

func findingsTable(fs []schemas.Finding) *store.Result {
	res := &store.Result{Columns: cols("kind", "String", "severity", "String", "job", "String", "team", "String",
		"node", "String", "gpu_uuid", "String", "pid", "UInt32", "first_seen", "String", "last_seen", "String",
		"waste_gpu_hours", "Float64", "waste_cost", "Float64", "currency", "String")}
	for _, f := range fs {
		gpu := ""
		if len(f.GPUUUIDs) > 0 {
			gpu = f.GPUUUIDs[0]
			if len(f.GPUUUIDs) > 1 {
				gpu += fmt.Sprintf(" +%d", len(f.GPUUUIDs)-1)
			}
		}
		res.Rows = append(res.Rows, []any{string(f.Kind), string(f.Severity), f.Job, f.Team, f.Node, gpu, uint64(f.PID),
			f.FirstSeen.Format("2006-01-02 15:04"), f.LastSeen.Format("2006-01-02 15:04"), f.WasteGPUHours,
			round2(f.WasteCost), f.Currency})
	}
	return res
}

// findingsByKind counts finding episodes per kind with their waste.
func findingsByKind(fs []schemas.Finding) *store.Result {
	res := &store.Result{Columns: cols("kind", "String", "findings", "UInt64", "open_at_end", "UInt64",
		"wasted_gpu_hours", "Float64", "wasted_cost", "Float64", "currency", "String")}
	type agg struct {
		n, open    uint64
		hours, usd float64
		currency   string
	}
	by := map[schemas.FindingKind]*agg{}
	for _, f := range fs {
		a := by[f.Kind]
		if a == nil {
			a = &agg{}
			by[f.Kind] = a
		}
		a.n++
		if f.State != schemas.StateResolved {
			a.open++
		}
		a.hours += f.WasteGPUHours
		a.usd += f.WasteCost
		if f.Currency != "" {
			if a.currency != "" && a.currency != f.Currency {
				a.currency = "mixed"
			} else if a.currency == "" {
				a.currency = f.Currency
			}
		}
	}
	for _, k := range schemas.FindingKinds {
		if a := by[k]; a != nil {
			res.Rows = append(res.Rows, []any{string(k), a.n, a.open, round2(a.hours), round2(a.usd), a.currency})
		}
	}
	return res
}

func chargebackTable(rows []chargeback.Row) *store.Result {
	res := &store.Result{Columns: cols("team", "String", "project", "String", "job", "String", "card", "String",
		"gpu_hours", "Float64", "idle_gpu_hours", "Float64", "cost", "Float64", "queue_wait_hours", "Float64",
		"failed_rerun_cost", "Float64", "energy_kwh", "Float64", "currency", "String")}
	for _, r := range rows {
		rerun := any(0.0)
		if r.FailedRerunCost == nil || *r.FailedRerunCost != 0 {
			rerun = money(r.FailedRerunCost)
		}
		res.Rows = append(res.Rows, []any{r.Team, r.Project, r.Job, r.Card, r.GPUHours, r.IdleGPUHours, money(r.Cost),
			r.QueueWaitHours, rerun, r.EnergyKWh, r.Currency})
	}
	return res
}

// costByTeam sums the chargeback per team: GPU-hours, idle GPU-hours, cost, idle
// cost and the cost of failed attempts that were rerun. A team with any unpriced
// hour shows its costs as unpriced.
func costByTeam(rows []chargeback.Row) *store.Result {
	res := &store.Result{Columns: cols("team", "String", "jobs", "UInt64", "gpu_hours", "Float64", "idle_gpu_hours", "Float64",
		"cost", "Float64", "idle_cost", "Float64", "failed_rerun_cost", "Float64", "currency", "String")}
	type agg struct {
		jobs                  map[string]bool
		hours, idle           float64
		cost, idleCost, rerun float64
		unpriced, mixed       bool
		currency              string
	}
	var order []string
	by := map[string]*agg{}
	for _, r := range rows {
		a := by[r.Team]
		if a == nil {
			a = &agg{jobs: map[string]bool{}}
			by[r.Team] = a
			order = append(order, r.Team)
		}
		a.jobs[r.Job] = true
		a.hours += r.GPUHours
		a.idle += r.IdleGPUHours
		if r.Cost == nil || r.IdleCost == nil || r.FailedRerunCost == nil {
			a.unpriced = true
		} else {
			a.cost += *r.Cost
			a.idleCost += *r.IdleCost
			a.rerun += *r.FailedRerunCost
		}
		if r.Currency != "" {
			if a.currency != "" && a.currency != r.Currency {
				a.mixed = true
			}
			a.currency = r.Currency
		}
	}
	slices.Sort(order)
	for _, team := range order {
		a := by[team]
		cost, idleCost, rerun := any(round2(a.cost)), any(round2(a.idleCost)), any(round2(a.rerun))
		if a.unpriced || a.mixed {
			cost, idleCost, rerun = "unpriced", "unpriced", "unpriced"
		}
		res.Rows = append(res.Rows, []any{team, uint64(len(a.jobs)), round2(a.hours), round2(a.idle), cost, idleCost, rerun, a.currency})
	}
	return res
}
