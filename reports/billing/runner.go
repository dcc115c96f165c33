package billing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpupool/gpupool/analyzer/chargeback"
	"github.com/gpupool/gpupool/reports"
	"github.com/gpupool/gpupool/store"
)

// Store is what a Runner needs: the finance views to read and, to refresh the
// rollups first, statements to run. store.Store implements it.
type Store interface {
	store.Querier
	chargeback.Store
}

// Metrics are the scheduled reports' Prometheus metrics.
type Metrics struct {
	// Runs counts scheduled runs by schedule and result: ok, error (no report
	// written) or slack_error (written, not posted).
	Runs *prometheus.CounterVec
	// LastSuccess is when each schedule last wrote its report (Unix seconds).
	LastSuccess *prometheus.GaugeVec
}

// NewMetrics creates the metrics and registers them with reg (if not nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpupool_reports_runs_total",
			Help: "Scheduled report runs by schedule and result (ok, error, slack_error).",
		}, []string{"schedule", "result"}),
		LastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpupool_report_last_success_timestamp_seconds",
			Help: "When the schedule last wrote its report, Unix seconds.",
		}, []string{"schedule"}),
	}
	if reg != nil {
		reg.MustRegister(m.Runs, m.LastSuccess)
	}
	return m
}

// Runner writes reports: the scheduled ones (Run is a reports.RunFunc) and those
// asked for on demand (Generate).
type Runner struct {
	store   Store
	dir     string
	refresh bool
	poster  Poster
	metrics *Metrics
	log     *slog.Logger
	now     func() time.Time
}

// RunnerOption changes a Runner.
type RunnerOption func(*Runner)

// WithPoster posts each scheduled report with a Slack channel through p.
func WithPoster(p Poster) RunnerOption { return func(r *Runner) { r.poster = p } }

// WithMetrics records scheduled runs in m.
func WithMetrics(m *Metrics) RunnerOption { return func(r *Runner) { r.metrics = m } }

// WithLogger logs through l.
func WithLogger(l *slog.Logger) RunnerOption { return func(r *Runner) { r.log = l } }

// WithClock sets the clock for the success timestamp (tests).
func WithClock(now func() time.Time) RunnerOption { return func(r *Runner) { r.now = now } }

// NewRunner returns a runner writing into cfg.Dir from s.
func NewRunner(cfg reports.Config, s Store, opts ...RunnerOption) (*Runner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("reports: invalid config: %w", err)
	}
	if cfg.Dir == "" {
		return nil, errors.New("reports: dir: empty")
	}
	r := &Runner{store: s, dir: cfg.Dir, refresh: cfg.Refresh, log: slog.New(slog.DiscardHandler), now: time.Now}
	for _, o := range opts {
		o(r)
	}
	r.log = r.log.With("component", "reports")
	return r, nil
}

// Generate refreshes the chargeback up to the period's end (if configured), builds
// the fleet's report of p and writes it in formats as <name>-<period>.<format>
// into the reports directory.
func (r *Runner) Generate(ctx context.Context, name string, p reports.Period, formats []string) (*Report, []string, error) {
	return r.GenerateFor(ctx, name, p, formats, FleetScope())
}

// GenerateFor is Generate for scope: the report is built, cut to scope once
// (Scoped), and every format is written from that one cut report.
func (r *Runner) GenerateFor(ctx context.Context, name string, p reports.Period, formats []string, scope Scope) (*Report, []string, error) {
	if r.refresh {
		until := p.To
		if now := r.now(); until.After(now) {
			until = now // only closed hours are refreshed
		}
		if err := chargeback.Refresh(ctx, r.store, until); err != nil {
			return nil, nil, fmt.Errorf("report %s: %w", p.Label, err)
		}
	}
	rep, err := BuildFor(ctx, r.store, p, scope)
	if err != nil {
		return nil, nil, err
	}
	paths, err := WriteFiles(r.dir, name, rep, formats)
	if err != nil {
		return rep, paths, err
	}
	return rep, paths, nil
}

// ScheduleScope is whose report a schedule writes: its teams' (schedules[].teams)
// when it names some, else the fleet's.
func ScheduleScope(sc reports.Schedule) Scope {
	if len(sc.Teams) > 0 {
		return TeamScope(sc.Teams...)
	}
	return FleetScope()
}

// Run produces one scheduled report: it is the reports.RunFunc of the scheduler.
// The files and the Slack summary are rendered from one report, cut to the
// schedule's scope. A report that was written but not posted to Slack counts as
// slack_error and returns an error wrapping ErrSlack.
func (r *Runner) Run(ctx context.Context, sc reports.Schedule, p reports.Period, at time.Time) error {
	start := time.Now()
	rep, paths, err := r.GenerateFor(ctx, sc.Name, p, sc.Formats, ScheduleScope(sc))
	if err != nil {
		r.count(sc.Name, "error")
		return err
	}
	if r.metrics != nil {
		r.metrics.LastSuccess.WithLabelValues(sc.Name).Set(float64(r.now().Unix()))
	}
	r.log.Info("report written", "schedule", sc.Name, "period", p.Label, "due", at, "files", paths,
		"cost", moneyText(rep.Totals.Cost), "currency", rep.Currency, "took", time.Since(start).Round(time.Millisecond))
	if sc.SlackChannel != "" && r.poster != nil {
		if err := r.poster.Post(ctx, sc.SlackChannel, rep, paths); err != nil {
			r.count(sc.Name, "slack_error")
			return err
		}
	}
	r.count(sc.Name, "ok")
	return nil
}

func (r *Runner) count(schedule, result string) {
	if r.metrics != nil {
		r.metrics.Runs.WithLabelValues(schedule, result).Inc()
	}
}
