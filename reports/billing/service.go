package billing

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/gpupool/gpupool/reports"
)

// Service is `gpupool reports`: the schedules of reports.schedules, each run
// writing the period's report into reports.dir and posting it to Slack when
// reports.slack is set, with one catch-up run of a schedule missed while the
// service was down.
type Service struct {
	cfg   reports.Config
	store Store
	sched *reports.Scheduler
	log   *slog.Logger
}

// NewService returns the service over s; opts configure its Runner (a Slack
// poster is added from cfg.Slack).
func NewService(cfg reports.Config, s Store, opts ...RunnerOption) (*Service, error) {
	if cfg.Slack.Enabled() {
		p, err := NewSlackPoster(cfg.Slack, nil)
		if err != nil {
			return nil, err
		}
		opts = append(opts, WithPoster(p))
	}
	runner, err := NewRunner(cfg, s, opts...)
	if err != nil {
		return nil, err
	}
	// The scheduler tags its lines component=reports as the runner does: give it
	// the logger the options set, untagged.
	base := &Runner{log: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(base)
	}
	sched, err := reports.NewScheduler(cfg.Schedules, cfg.StateFile, runner.Run, reports.WithLogger(base.log))
	if err != nil {
		return nil, err
	}
	return &Service{cfg: cfg, store: s, sched: sched, log: runner.log}, nil
}

// Ready reports whether the store answers (for /readyz).
func (s *Service) Ready(ctx context.Context) error {
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := s.store.Query(qctx, "SELECT 1", nil); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}

// Run runs the schedules until ctx ends.
func (s *Service) Run(ctx context.Context) error {
	if len(s.cfg.Schedules) == 0 {
		s.log.Warn("no report schedules configured (reports.schedules); waiting for none")
	}
	s.log.Info("reports running", "dir", s.cfg.Dir, "schedules", len(s.cfg.Schedules), "slack", s.cfg.Slack.Enabled())
	return s.sched.Run(ctx)
}
