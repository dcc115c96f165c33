package analyzer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/gpupool/gpupool/analyzer/chargeback"
	"github.com/gpupool/gpupool/analyzer/findings"
	"github.com/gpupool/gpupool/analyzer/pricebook"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
)

// Store is what the service needs of the store: queries, statements (the
// chargeback refresh) and inserts (finding versions). store.Store implements it.
type Store interface {
	store.Querier
	Exec(ctx context.Context, sql string, params store.Params) error
	Insert(ctx context.Context, table string, b *store.Block, token string) error
}

var _ Store = store.Store(nil)

// Service runs analyzer passes: each brings the chargeback tables up to the pass
// time, runs the finding detectors and updates the metrics. Passes run one at a
// time; Run runs them every Config.Interval, Pass on demand (the demo and `gpupool
// analyze` call it on simulated time).
type Service struct {
	cfg     Config
	st      Store
	an      *findings.Analyzer
	prices  *passPrices
	metrics *Metrics
	log     *slog.Logger

	mu sync.Mutex // one pass at a time
	// refreshed is the hour of the last pass whose chargeback refresh succeeded.
	refreshed time.Time
	lastAt    time.Time
	lastErr   error
	lastDone  bool
	// onPass, when set (tests), is called after every pass of Run.
	onPass func(PassResult, error)
}

// PassResult says what one pass did.
type PassResult struct {
	// At is the pass time.
	At time.Time
	// Findings is the detectors' result.
	Findings findings.RunResult
	// OpenByKind is the number of findings open after the pass, per kind.
	OpenByKind map[schemas.FindingKind]int
	// Utilisation is per pool and card type over [At-Interval, At).
	Utilisation []PoolUtilisation
	// PriceProblems are the price book's problems for the cards in use over
	// [At-PriceCheckWindow, At).
	PriceProblems []pricebook.Problem
	// Took is the pass's wall time; Steps that of each step (refresh, findings,
	// open, utilisation, prices).
	Took  time.Duration
	Steps map[string]time.Duration
}

// PoolUtilisation is what one pool's jobs held of one card type over a window.
type PoolUtilisation struct {
	Pool, Card string
	// Ratio is the share of the measured samples of the GPUs the pool's jobs held,
	// while they held them, that were active; NaN when none was measured.
	Ratio float64
	// AllocatedGPUs is the GPUs held on average over the window (a MIG instance
	// counts as its compute slices / 7).
	AllocatedGPUs float64
}

// Option changes how New builds a Service.
type Option func(*options)

type options struct {
	pub     findings.Publisher
	metrics *Metrics
	log     *slog.Logger
}

// WithPublisher sets where finding events are published (default: nowhere, they
// are only written to the store).
func WithPublisher(p findings.Publisher) Option { return func(o *options) { o.pub = p } }

// WithMetrics sets the service's metrics (default: NewMetrics(nil), kept but not
// registered).
func WithMetrics(m *Metrics) Option { return func(o *options) { o.metrics = m } }

// WithLogger sets the logger (default: discard); lines are tagged
// component=analyzer.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// New returns a service over st.
func New(cfg Config, st Store, opts ...Option) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("analyzer: invalid config: %w", err)
	}
	if st == nil {
		return nil, errors.New("analyzer: no store to analyse")
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.log == nil {
		o.log = slog.New(slog.DiscardHandler)
	}
	if o.metrics == nil {
		o.metrics = NewMetrics(nil)
	}
	prices := &passPrices{q: st}
	// findings tags its log lines with component=analyzer itself.
	an, err := findings.New(cfg.FindingsConfig(), st,
		findings.WithPrices(prices), findings.WithPublisher(o.pub), findings.WithLogger(o.log))
	if err != nil {
		return nil, fmt.Errorf("analyzer: %w", err)
	}
	return &Service{cfg: cfg, st: st, an: an, prices: prices, metrics: o.metrics, log: o.log.With("component", "analyzer")}, nil
}

// Run passes now and then every Config.Interval until ctx ends. A failed pass is
// logged and counted (gpupool_analyzer_passes_total{result="error"}); the loop goes
// on. It returns nil when ctx ends.
func (s *Service) Run(ctx context.Context) error {
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for ctx.Err() == nil {
		res, err := s.Pass(ctx, time.Now())
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			s.log.Warn("analyzer pass failed", "at", res.At, "err", err)
		}
		if s.onPass != nil {
			s.onPass(res, err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
	return nil
}

// Pass runs one pass at now: chargeback.Refresh up to now (on the first pass of
// each hour, as only closed hours are written), the detectors over
// their windows ending at now, then the open-findings, utilisation and price book
// gauges. Each step runs even if an earlier one failed; the error joins every
// failure. now should not go backwards from one pass to the next.
func (s *Service) Pass(ctx context.Context, now time.Time) (PassResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	start := time.Now()
	now = now.UTC()
	res := PassResult{At: now, Steps: map[string]time.Duration{}}
	s.prices.reset() // see finance's latest price book edits
	var errs []error
	mark := time.Now()
	step := func(name string) {
		res.Steps[name] = time.Since(mark)
		mark = time.Now()
	}
	// Refresh writes closed hours only, so it runs on the first pass after an hour
	// closes (and on a service's first pass); a refresh costs seconds whatever
	// changed, as it fingerprints its look-back hours.
	if hour := now.Truncate(time.Hour); !hour.Equal(s.refreshed) {
		if err := chargeback.Refresh(ctx, s.st, now); err != nil {
			errs = append(errs, fmt.Errorf("analyzer: chargeback refresh: %w", err))
		} else {
			s.refreshed = hour
		}
	}
	step("refresh")
	run, err := s.an.Run(ctx, now)
	step("findings")
	res.Findings = run
	if err != nil {
		errs = append(errs, fmt.Errorf("analyzer: %w", err))
	}
	s.metrics.detectors(run)
	for _, f := range run.Opened {
		s.metrics.raised.WithLabelValues(string(f.Kind)).Inc()
	}
	for _, f := range run.Resolved {
		s.metrics.resolved.WithLabelValues(string(f.Kind)).Inc()
	}
	if res.OpenByKind, err = s.openByKind(ctx, now); err != nil {
		errs = append(errs, fmt.Errorf("analyzer: count open findings: %w", err))
	} else {
		for _, k := range schemas.FindingKinds {
			s.metrics.findingsOpen.WithLabelValues(string(k)).Set(float64(res.OpenByKind[k]))
		}
	}
	step("open")
	if res.Utilisation, err = s.utilisation(ctx, now.Add(-s.cfg.Interval), now); err != nil {
		errs = append(errs, fmt.Errorf("analyzer: pool utilisation: %w", err))
	} else {
		s.metrics.poolUtilisation.Reset()
		s.metrics.poolAllocated.Reset()
		for _, u := range res.Utilisation {
			if !math.IsNaN(u.Ratio) {
				s.metrics.poolUtilisation.WithLabelValues(u.Pool, u.Card).Set(u.Ratio)
			}
			s.metrics.poolAllocated.WithLabelValues(u.Pool, u.Card).Set(u.AllocatedGPUs)
		}
	}
	step("utilisation")
	if res.PriceProblems, err = pricebook.Check(ctx, s.st, now.Add(-s.cfg.PriceCheckWindow), now); err != nil {
		errs = append(errs, fmt.Errorf("analyzer: price book check: %w", err))
	} else {
		s.metrics.priceProblems.Set(float64(len(res.PriceProblems)))
	}
	step("prices")
	res.Took = time.Since(start)
	if ctx.Err() != nil {
		// Cut short by shutdown: not a failed pass, and not one to count.
		return res, fmt.Errorf("analyzer: pass at %s: %w", now.Format(time.RFC3339), ctx.Err())
	}
	s.metrics.passDuration.Observe(res.Took.Seconds())
	err = errors.Join(errs...)
	result := "ok"
	if err != nil {
		result = "error"
	}
	s.metrics.passes.WithLabelValues(result).Inc()
	s.lastAt, s.lastErr, s.lastDone = now, err, true
	s.log.Debug("pass done", "at", now, "took", res.Took, "opened", len(run.Opened), "resolved", len(run.Resolved), "ok", err == nil, "steps", res.Steps)
	return res, err
}

// RunPass runs Pass at at and returns its error only: the pass function of a
// clock.Runner, which runs passes on a trace's or a simulation's clock.
func (s *Service) RunPass(ctx context.Context, at time.Time) error {
	_, err := s.Pass(ctx, at)
	return err
}

// Ready reports whether the last pass succeeded (nil before the first pass ends,
// so a starting service is not reported down).
func (s *Service) Ready() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lastDone && s.lastErr != nil {
		return fmt.Errorf("last analyzer pass at %s failed: %w", s.lastAt.Format(time.RFC3339), s.lastErr)
	}
	return nil
}

// Findings returns the latest version of every finding episode that opened in
// [from, to], in order of first_seen.
func (s *Service) Findings(ctx context.Context, from, to time.Time) ([]schemas.Finding, error) {
	return s.an.History(ctx, from, to)
}

// openSQL counts the findings whose latest version at {now} is not resolved, by
// kind (findings_open does the same at the wall clock's now; passes on simulated
// time need their own).
const openSQL = `SELECT k AS kind, count() AS open FROM (
    SELECT id, argMax(kind, updated_at) AS k, argMax(state, updated_at) AS s
    FROM findings WHERE updated_at <= {now:DateTime64(3, 'UTC')} GROUP BY id
) WHERE s != 'resolved' GROUP BY kind ORDER BY kind`

func (s *Service) openByKind(ctx context.Context, now time.Time) (map[schemas.FindingKind]int, error) {
	res, err := s.st.Query(ctx, openSQL, store.Params{"now": TimeParam(now)})
	if err != nil {
		return nil, err
	}
	out := map[schemas.FindingKind]int{}
	rows := store.Read(res, "open findings by kind")
	for rows.Next() {
		out[schemas.FindingKind(rows.Str("kind"))] = int(rows.Int("open"))
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// utilisationSQL measures, per pool and card type, the GPU-minutes in
// [{from}, {to}) that the pool's jobs held (gpu_minute rows of their GPUs between
// their start and end; a MIG instance weighs its compute slices / 7) and how many
// of those minutes' measured samples were active. Active is the rollup's
// definition, the one chargeback's used_gpu_hours counts: engine, DRAM or PCIe
// busy (migration 0003). A GPU two jobs of one pool hold at once counts once per
// job. It reads the minute rollup, not chargeback.Compute, because it runs every
// pass and needs no money: Compute's exact, shared-GPU-split figures cost seconds.
const utilisationSQL = `SELECT h.pool AS pool, toString(m.card) AS card,
       sum(m.active) AS active_samples, sum(m.measured) AS measured_samples,
       sum(if(m.mig = '', 1, greatest(toUInt8OrZero(splitByChar('g', m.mig)[1]), 1) / 7)) AS gpu_minutes
FROM (
    SELECT toString(pool) AS pool, arrayJoin(gpu_uuids) AS gpu_uuid, start_time, end_time FROM jobs
    WHERE start_time IS NOT NULL AND start_time < {to:DateTime64(3, 'UTC')}
      AND coalesce(end_time, {to:DateTime64(3, 'UTC')}) > {from:DateTime64(3, 'UTC')}
) AS h
INNER JOIN (
    SELECT minute, gpu_uuid, any(card) AS card, toString(any(mig_profile)) AS mig,
           sum(active_samples) AS active, sum(activity_samples) AS measured
    FROM gpu_minute
    WHERE minute >= toStartOfMinute({from:DateTime64(3, 'UTC')}) AND minute < {to:DateTime64(3, 'UTC')}
    GROUP BY minute, gpu_uuid
) AS m ON m.gpu_uuid = h.gpu_uuid
WHERE m.minute >= toStartOfMinute(h.start_time) AND m.minute < coalesce(h.end_time, {to:DateTime64(3, 'UTC')})
GROUP BY pool, card
ORDER BY pool, card`

// utilisation measures what each pool's jobs held of each card type over
// [from, to) and how active it was (see utilisationSQL).
func (s *Service) utilisation(ctx context.Context, from, to time.Time) ([]PoolUtilisation, error) {
	res, err := s.st.Query(ctx, utilisationSQL, store.Params{"from": TimeParam(from), "to": TimeParam(to)})
	if err != nil {
		return nil, err
	}
	minutes := to.Sub(from).Minutes()
	rows := store.Read(res, "pool utilisation")
	out := make([]PoolUtilisation, 0, rows.Len())
	for rows.Next() {
		u := PoolUtilisation{Pool: rows.Str("pool"), Card: rows.Str("card"), Ratio: math.NaN()}
		// NULL sums are NaN, as they were before the row reader: a NaN count of
		// samples leaves the ratio unknown (NaN), not 0.
		active, measured := rows.FloatOr("active_samples", math.NaN()), rows.FloatOr("measured_samples", math.NaN())
		if measured > 0 {
			u.Ratio = active / measured
		}
		u.AllocatedGPUs = rows.FloatOr("gpu_minutes", math.NaN()) / minutes
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// passPrices is the price book the detectors cost waste with: a fresh
// pricebook.Book per pass, so finance's edits apply from the next pass.
type passPrices struct {
	q    store.Querier
	mu   sync.Mutex
	book *pricebook.Book
}

var _ findings.Prices = (*passPrices)(nil)

func (p *passPrices) reset() {
	p.mu.Lock()
	p.book = pricebook.New(p.q)
	p.mu.Unlock()
}

// PricePerGPUHour prices card at at from this pass's price book.
func (p *passPrices) PricePerGPUHour(ctx context.Context, card string, at time.Time) (float64, string, error) {
	p.mu.Lock()
	b := p.book
	if b == nil {
		b = pricebook.New(p.q)
		p.book = b
	}
	p.mu.Unlock()
	return b.PricePerGPUHour(ctx, card, at)
}
