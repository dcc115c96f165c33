package reports

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/gpupool/gpupool/secure/redact"
)

// Schedule is one scheduled report.
type Schedule struct {
	// Name names the report's files: <dir>/<name>-<period>.<format>.
	Name string `yaml:"name"`
	// Cron is a five-field cron expression ("0 8 1 * *": 08:00 on the 1st).
	Cron string `yaml:"cron"`
	// TimeZone is an IANA zone ("Europe/Berlin"); empty is UTC.
	TimeZone string `yaml:"timezone"`
	// Period is previous_day, previous_week or previous_month.
	Period string `yaml:"period"`
	// Formats to write: html, csv, json, parquet.
	Formats []string `yaml:"formats"`
	// SlackChannel, when set, receives a summary (and, with a bot token, the
	// report's HTML or CSV file).
	SlackChannel string `yaml:"slack_channel"`
	// Teams, when set, cuts the report to these teams' own figures (a team's
	// report for its own channel): every file and the Slack summary then leave
	// out other teams and the fleet-wide figures. Empty is the fleet's report.
	Teams []string `yaml:"teams"`
}

// Validate checks a schedule, naming the field.
func (s Schedule) Validate() error {
	if s.Name == "" {
		return errors.New("name: empty")
	}
	if _, err := s.parse(); err != nil {
		return err
	}
	if _, err := PeriodBefore(s.Period, time.Now()); err != nil {
		return fmt.Errorf("period: %w", err)
	}
	if len(s.Formats) == 0 {
		return errors.New("formats: at least one of html, csv, json, parquet")
	}
	for _, f := range s.Formats {
		if f != "html" && f != "csv" && f != "json" && f != FormatParquet {
			return fmt.Errorf("formats: %q is not html, csv, json or parquet", f)
		}
	}
	for i, t := range s.Teams {
		if strings.TrimSpace(t) == "" {
			return fmt.Errorf("teams[%d]: empty team name", i)
		}
	}
	return nil
}

// parse reads the cron expression in the schedule's time zone.
func (s Schedule) parse() (cron.Schedule, error) {
	loc := time.UTC
	if s.TimeZone != "" {
		var err error
		if loc, err = time.LoadLocation(s.TimeZone); err != nil {
			return nil, fmt.Errorf("timezone: %w", err)
		}
	}
	sched, err := cron.ParseStandard("CRON_TZ=" + loc.String() + " " + s.Cron)
	if err != nil {
		return nil, fmt.Errorf("cron: %q: %w", s.Cron, err)
	}
	return sched, nil
}

// Clock is time for the scheduler; tests use a fake.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// RunFunc produces one scheduled report for a period; at is when it was due.
type RunFunc func(ctx context.Context, s Schedule, p Period, at time.Time) error

// Scheduler runs reports on their schedules. Runs missed while it was down are
// caught up once on start: the latest missed run of each schedule, not every one.
type Scheduler struct {
	schedules []Schedule
	parsed    []cron.Schedule
	run       RunFunc
	stateFile string
	clock     Clock
	log       *slog.Logger

	mu   sync.Mutex
	last map[string]time.Time // schedule name → the due time of its last run
}

// SchedulerOption changes how a Scheduler is built.
type SchedulerOption func(*Scheduler)

// WithClock sets the clock the schedules fire on (default: the system clock).
func WithClock(c Clock) SchedulerOption { return func(s *Scheduler) { s.clock = c } }

// WithLogger sets the logger (default: discarded).
func WithLogger(log *slog.Logger) SchedulerOption { return func(s *Scheduler) { s.log = log } }

// NewScheduler returns a scheduler keeping its state (last runs) in stateFile.
func NewScheduler(schedules []Schedule, stateFile string, run RunFunc, opts ...SchedulerOption) (*Scheduler, error) {
	s := &Scheduler{schedules: schedules, run: run, stateFile: stateFile, clock: realClock{}, log: slog.New(slog.DiscardHandler), last: map[string]time.Time{}}
	for _, o := range opts {
		o(s)
	}
	s.log = s.log.With("component", "reports")
	seen := map[string]bool{}
	for i, sc := range schedules {
		if err := sc.Validate(); err != nil {
			return nil, fmt.Errorf("reports.schedules[%d]: %w", i, err)
		}
		if seen[sc.Name] {
			return nil, fmt.Errorf("reports.schedules[%d].name: %q is used twice", i, sc.Name)
		}
		seen[sc.Name] = true
		p, _ := sc.parse()
		s.parsed = append(s.parsed, p)
	}
	if data, err := os.ReadFile(stateFile); err == nil {
		if err := json.Unmarshal(data, &s.last); err != nil {
			return nil, fmt.Errorf("reports: state file %s: %w", stateFile, err)
		}
	}
	return s, nil
}

// due returns the latest time schedule i was due in (after, upTo], if any.
func (s *Scheduler) due(i int, after, upTo time.Time) (time.Time, bool) {
	var last time.Time
	for t := s.parsed[i].Next(after); !t.After(upTo); t = s.parsed[i].Next(t) {
		last = t
	}
	return last, !last.IsZero()
}

// Run catches up missed runs, then runs each schedule when due, until ctx ends.
func (s *Scheduler) Run(ctx context.Context) error {
	now := s.clock.Now()
	for i, sc := range s.schedules {
		last, ok := s.lastRun(sc.Name)
		if !ok {
			// First start: nothing was missed; begin with the next run.
			s.setLastRun(sc.Name, now)
			continue
		}
		if at, missed := s.due(i, last, now); missed {
			s.log.Info("catching up a missed report", "schedule", sc.Name, "due", at)
			s.runOne(ctx, i, at)
		}
	}
	for {
		now = s.clock.Now()
		next, idx := time.Time{}, -1
		for i := range s.schedules {
			if t := s.parsed[i].Next(now); idx < 0 || t.Before(next) {
				next, idx = t, i
			}
		}
		if idx < 0 {
			<-ctx.Done()
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.clock.After(next.Sub(now)):
		}
		for i := range s.schedules {
			if at, ok := s.due(i, now, s.clock.Now()); ok {
				s.runOne(ctx, i, at)
			}
		}
	}
}

func (s *Scheduler) runOne(ctx context.Context, i int, at time.Time) {
	sc := s.schedules[i]
	loc := time.UTC
	if sc.TimeZone != "" {
		loc, _ = time.LoadLocation(sc.TimeZone)
	}
	p, err := PeriodBefore(sc.Period, at.In(loc))
	if err == nil {
		err = s.run(ctx, sc, p, at)
	}
	if err != nil {
		// Recorded as run anyway: a broken report is retried at its next time, not
		// in a loop; the log line and the caller's metric say it failed.
		// A run's error may quote a Slack webhook URL or a server's DSN: masked.
		s.log.Error("scheduled report failed", "schedule", sc.Name, "period", p.Label, "err", redact.Error(err))
	}
	s.setLastRun(sc.Name, at)
}

func (s *Scheduler) lastRun(name string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.last[name]
	return t, ok
}

// setLastRun records a run and saves the state (write-then-rename).
func (s *Scheduler) setLastRun(name string, at time.Time) {
	s.mu.Lock()
	s.last[name] = at
	data, _ := json.MarshalIndent(s.last, "", "  ")
	s.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(s.stateFile), 0o755); err == nil {
		tmp := s.stateFile + ".tmp"
		if err := os.WriteFile(tmp, data, 0o644); err == nil {
			err = os.Rename(tmp, s.stateFile)
			if err != nil {
				s.log.Warn("saving report state", "err", err)
			}
		}
	}
}
