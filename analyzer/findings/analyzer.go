package findings

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
)

// Store is what the analyzer needs of the store: queries for the detectors and the
// open findings, and inserts for new finding versions. store.Store implements it.
type Store interface {
	Query(ctx context.Context, sql string, params store.Params) (*store.Result, error)
	Insert(ctx context.Context, table string, b *store.Block, token string) error
}

var _ Store = store.Store(nil)

// Analyzer runs detector passes and keeps the findings' lifecycle. Run is not safe
// for concurrent use: passes are meant to run one after another.
type Analyzer struct {
	cfg    Config
	q      Store
	prices Prices
	pub    Publisher
	log    *slog.Logger
	// lastHints is the last pass that ran the hint detectors.
	lastHints time.Time
	// stalled are the running jobs with a stall signal (signalStall) and when
	// their GPUs went flat: kept while they stay flat, so a stall stays known
	// after its busy baseline has scrolled out of the look-back.
	stalled map[string]time.Time
}

// Option changes how New builds an Analyzer.
type Option func(*Analyzer)

// WithPrices sets the price book findings' waste is costed with (default: none,
// findings carry no cost).
func WithPrices(p Prices) Option { return func(a *Analyzer) { a.prices = p } }

// WithPublisher sets where finding events are published (default: nowhere, they
// are only written to the store).
func WithPublisher(p Publisher) Option { return func(a *Analyzer) { a.pub = p } }

// WithLogger sets the logger (default: discard); lines are tagged
// component=analyzer.
func WithLogger(l *slog.Logger) Option { return func(a *Analyzer) { a.log = l } }

// New returns an analyzer over q.
func New(cfg Config, q Store, opts ...Option) (*Analyzer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("findings: invalid config: %w", err)
	}
	if q == nil {
		return nil, errors.New("findings: no store to analyse")
	}
	a := &Analyzer{cfg: cfg, q: q, stalled: map[string]time.Time{}}
	for _, o := range opts {
		o(a)
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	a.log = a.log.With("component", "analyzer")
	return a, nil
}

// RunResult says what one pass did.
type RunResult struct {
	// At is the pass time.
	At time.Time
	// Detected counts, per kind, what the detectors saw in this pass.
	Detected map[schemas.FindingKind]int
	// Opened, Updated and Resolved are the versions written.
	Opened, Updated, Resolved []schemas.Finding
	// Open is the number of findings open after the pass.
	Open int
	// Published and PublishFailed count bus messages.
	Published, PublishFailed int
	// Failed holds the error of each detector that failed; its kind's open
	// findings were left untouched.
	Failed map[schemas.FindingKind]error
	// Skipped lists the hint kinds not run in this pass (see Config.HintInterval);
	// their open findings were left untouched too.
	Skipped []schemas.FindingKind
}

// Run does one pass at now over the window of each detector ending at now: it runs
// the detectors, compares what they see with the open findings, writes the new
// versions and publishes openings, escalations, changes and resolutions. now comes
// from the caller (a scheduler loop, the demo, a harness on simulated time) and
// should not go backwards from one pass to the next. A failed detector does not
// stop the pass: the result is complete for the others and the error wraps
// ErrDetector.
func (a *Analyzer) Run(ctx context.Context, now time.Time) (RunResult, error) {
	now = now.UTC().Truncate(time.Millisecond)
	res := RunResult{At: now, Detected: map[schemas.FindingKind]int{}, Failed: map[schemas.FindingKind]error{}}
	open, err := a.loadOpen(ctx, now)
	if err != nil {
		return res, fmt.Errorf("findings: read open findings: %w", err)
	}
	ps := newPass(now, a.prices, a.log)
	for _, f := range open {
		if f.Kind == schemas.KindHung {
			ps.openHung[f.Job] = true
		}
	}
	for job := range a.stalled {
		ps.stalled[job] = true
	}
	if ps.running, err = a.loadRunning(ctx, now); err != nil {
		return res, fmt.Errorf("findings: read running jobs: %w", err)
	}
	for _, j := range ps.running {
		for _, u := range j.gpus {
			ps.holders[u] = append(ps.holders[u], j.job)
		}
	}
	detected := map[schemas.FindingKind][]detection{}
	hints := a.lastHints.IsZero() || !now.Before(a.lastHints.Add(a.cfg.HintInterval)) || now.Before(a.lastHints)
	untouched := map[schemas.FindingKind]bool{}
	// Detectors are independent queries: run them together (the store gives each
	// its own connection; a ClickHouse server runs them in parallel).
	var run []schemas.FindingKind
	for _, k := range schemas.FindingKinds {
		if isHint(k) && !hints {
			res.Skipped = append(res.Skipped, k)
			untouched[k] = true
			continue
		}
		run = append(run, k)
	}
	outs := make([][]detection, len(run))
	errs := make([]error, len(run))
	var wg sync.WaitGroup
	for i, k := range run {
		wg.Go(func() { outs[i], errs[i] = a.detect(ctx, k, ps) })
	}
	wg.Wait()
	if ctx.Err() != nil {
		return res, fmt.Errorf("findings: %w", ctx.Err())
	}
	for i, k := range run {
		if errs[i] != nil {
			res.Failed[k] = errs[i]
			untouched[k] = true
			a.log.Warn("detector failed", "kind", k, "err", errs[i])
			continue
		}
		detected[k] = outs[i]
		res.Detected[k] = len(outs[i])
	}
	stalled := a.takeStalls(ps, detected, untouched[schemas.KindHung])
	res.Detected[schemas.KindHung] = len(detected[schemas.KindHung])
	applyPrecedence(open, detected, stalled)
	for _, k := range schemas.FindingKinds {
		if _, ran := res.Detected[k]; ran {
			res.Detected[k] = len(detected[k])
		}
	}

	if hints {
		a.lastHints = now
	}
	versions, events, err := a.merge(ctx, ps, open, detected, untouched)
	if err != nil {
		return res, fmt.Errorf("findings: %w", err)
	}
	if err := a.write(ctx, now, versions); err != nil {
		return res, fmt.Errorf("findings: write %d finding versions: %w", len(versions), err)
	}
	res.Open = len(open)
	for _, v := range versions {
		switch v.State {
		case schemas.StateOpen:
			res.Opened = append(res.Opened, v)
			res.Open++
		case schemas.StateUpdated:
			res.Updated = append(res.Updated, v)
		case schemas.StateResolved:
			res.Resolved = append(res.Resolved, v)
			res.Open--
		}
	}
	res.Published, res.PublishFailed = a.publish(ctx, events)
	level := slog.LevelDebug
	if len(res.Opened)+len(res.Resolved) > 0 || len(res.Failed) > 0 {
		level = slog.LevelInfo
	}
	a.log.Log(ctx, level, "analyzer pass", "at", now, "opened", len(res.Opened), "updated", len(res.Updated),
		"resolved", len(res.Resolved), "open", res.Open, "published", res.Published, "failed_detectors", len(res.Failed))
	if len(res.Failed) > 0 {
		errs := make([]error, 0, len(res.Failed))
		for _, k := range schemas.FindingKinds {
			if e := res.Failed[k]; e != nil {
				errs = append(errs, e)
			}
		}
		return res, fmt.Errorf("findings: %w: %w", ErrDetector, errors.Join(errs...))
	}
	return res, nil
}

// detect runs the detector of kind k.
func (a *Analyzer) detect(ctx context.Context, k schemas.FindingKind, ps *pass) ([]detection, error) {
	d, ok := detectorOf(k)
	if !ok {
		return nil, fmt.Errorf("unknown kind %q", k)
	}
	return d.detect(a, ctx, ps)
}

// jobsWith returns the jobs with a finding of one of kinds, seen now or open.
func jobsWith(open map[string]schemas.Finding, detected map[schemas.FindingKind][]detection, kinds ...schemas.FindingKind) map[string]bool {
	jobs := map[string]bool{}
	for _, k := range kinds {
		for _, d := range detected[k] {
			jobs[d.f.Job] = true
		}
	}
	for _, f := range open {
		if slices.Contains(kinds, f.Kind) {
			jobs[f.Job] = true
		}
	}
	return jobs
}

// isHint reports whether k is an optimisation hint rather than reclaimable waste:
// its detector runs at the hint interval.
func isHint(k schemas.FindingKind) bool { return k.Info().Advice }

// merge compares the detections with the open findings and returns the versions to
// write and the events to publish:
//   - detected and not open: a new episode opens (published);
//   - detected and open: a new version with last_seen, evidence and waste grown
//     (published only when its severity rises or its GPUs or recommendation change);
//   - open, not detected, unseen for ResolveAfter: resolved (published);
//   - open, not detected for less: left as it is.
//
// Open findings of a kind whose detector failed or did not run are left as they are.
func (a *Analyzer) merge(ctx context.Context, ps *pass, open map[string]schemas.Finding, detected map[schemas.FindingKind][]detection,
	untouched map[schemas.FindingKind]bool) ([]schemas.Finding, []event, error) {
	var fresh []string
	for _, k := range schemas.FindingKinds {
		for _, d := range detected[k] {
			if _, ok := open[d.f.ID]; !ok {
				fresh = append(fresh, d.f.ID)
			}
		}
	}
	last, err := a.lastEpisodes(ctx, fresh)
	if err != nil {
		return nil, nil, fmt.Errorf("read past episodes: %w", err)
	}
	var versions []schemas.Finding
	var events []event
	seen := map[string]bool{}
	for _, k := range schemas.FindingKinds {
		for _, d := range detected[k] {
			if seen[d.f.ID] {
				continue
			}
			seen[d.f.ID] = true
			f := clone(&d.f)
			f.LastSeen, f.UpdatedAt = ps.now, ps.now
			o, wasOpen := open[f.ID]
			if wasOpen {
				f.State, f.Episode, f.FirstSeen = schemas.StateUpdated, o.Episode, o.FirstSeen
				if !o.Since.IsZero() && o.Since.Before(f.Since) {
					f.Since = o.Since
				}
			} else {
				f.State, f.Episode, f.FirstSeen = schemas.StateOpen, last[f.ID]+1, ps.now
			}
			a.price(ctx, ps, &f, d)
			versions = append(versions, f)
			switch {
			case !wasOpen:
				events = append(events, event{schemas.EventOpened, f})
			case f.Severity.Rank() > o.Severity.Rank():
				events = append(events, event{schemas.EventEscalated, f})
			case !slices.Equal(f.GPUUUIDs, o.GPUUUIDs) || f.Recommended != o.Recommended:
				events = append(events, event{schemas.EventChanged, f})
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(open)) {
		o := open[id]
		if seen[id] || untouched[o.Kind] || ps.now.Sub(o.LastSeen) < a.cfg.ResolveAfter {
			continue
		}
		r := clone(&o)
		r.State, r.ResolvedAt, r.UpdatedAt = schemas.StateResolved, ps.now, ps.now
		versions = append(versions, r)
		events = append(events, event{schemas.EventResolved, r})
	}
	return versions, events, nil
}

// price sets f's waste, cost and severity: waste is the detection's GPU-equivalents
// × its waste share × the hours from since to last seen, priced at the card's rate
// now (the price book's rate at first_seen may differ; the cost is an estimate).
func (a *Analyzer) price(ctx context.Context, ps *pass, f *schemas.Finding, d detection) {
	hours := max(f.LastSeen.Sub(f.Since).Hours(), 0)
	f.WasteGPUHours = round3(hours * d.gpus * d.wasteShare)
	f.WasteCost, f.Currency = 0, ""
	if f.WasteGPUHours > 0 {
		if p, cur, err := ps.price(ctx, f.Card); err == nil {
			f.WasteCost, f.Currency = round3(f.WasteGPUHours*p), cur
		}
	}
	switch {
	case f.Kind.Info().Severity != "":
		f.Severity = f.Kind.Info().Severity
	case f.WasteGPUHours >= a.cfg.CriticalWasteGPUHours:
		f.Severity = schemas.SeverityCritical
	default:
		f.Severity = schemas.SeverityWarning
	}
}

// takeStalls moves the stall signals out of the hung detections and keeps the
// set of stalled jobs up to date: a job stays stalled while the hung detector
// still sees its GPUs flat. When the hung detector did not run, the last set
// stands.
func (a *Analyzer) takeStalls(ps *pass, detected map[schemas.FindingKind][]detection, failed bool) map[string]bool {
	if !failed {
		now := map[string]time.Time{}
		detected[schemas.KindHung] = slices.DeleteFunc(detected[schemas.KindHung], func(d detection) bool {
			if d.reason != reasonStall {
				return false
			}
			since := d.f.Since
			if s, ok := a.stalled[d.f.Job]; ok && s.Before(since) {
				since = s
			}
			now[d.f.Job] = since
			return true
		})
		a.stalled = now
	}
	out := make(map[string]bool, len(a.stalled))
	for job := range a.stalled {
		out[job] = true
	}
	return out
}
