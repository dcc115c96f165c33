package main

import (
	"context"
	"io"
	"log/slog"

	"github.com/gpupool/gpupool/internal/config"
	"github.com/gpupool/gpupool/reports"
	"github.com/gpupool/gpupool/reports/billing"
	"github.com/gpupool/gpupool/store/backend"
)

// ReportCommands are the chargeback reports' subcommands: the scheduled service
// and the on-demand report.
type ReportCommands struct {
	Reports ReportsCmd `cmd:"" help:"Write the scheduled chargeback reports (reports.schedules) and post them to Slack; serves /metrics."`
	Report  ReportCmd  `cmd:"" help:"Chargeback reports on demand."`
}

// ReportsCmd runs the report schedules until interrupted.
type ReportsCmd struct {
	Dir     string `help:"Reports directory (default reports.dir, <data_dir>/reports)."`
	Metrics string `help:"Address for /metrics, /healthz, /readyz (e.g. :9472); default reports.metrics_listen."`

	log *slog.Logger // tests catch the metrics address
}

// Run loads the configuration, opens the store and runs the schedules, catching
// up once on a run missed while the service was down.
func (r *ReportsCmd) Run(g *Globals, ctx context.Context) error {
	c, log, err := g.setup(func(c *config.Config) {
		if r.Dir != "" {
			c.Reports.Dir = r.Dir // state_file, unless set, follows it (Resolve)
		}
		setIf(&c.Reports.MetricsListen, r.Metrics)
	})
	if err != nil {
		return err
	}
	if r.log != nil {
		log = r.log
	}
	st, err := backend.OpenMigrated(ctx, c.Store, log)
	if err != nil {
		return err
	}
	defer st.Close()
	reg := newRegistry()
	svc, err := billing.NewService(c.Reports, st, billing.WithLogger(log), billing.WithMetrics(billing.NewMetrics(reg)))
	if err != nil {
		return err
	}
	if err := serveMetrics(ctx, c.Reports.MetricsListen, c, reg, func() error { return svc.Ready(ctx) }, log); err != nil {
		return err
	}
	return svc.Run(ctx)
}

// ReportCmd groups the on-demand report commands.
type ReportCmd struct {
	Run ReportRunCmd `cmd:"" help:"Refresh the chargeback up to the period's end, then write its report."`
}

// ReportRunCmd writes one period's chargeback report now.
type ReportRunCmd struct {
	Period   string   `required:"" help:"Period: a month (2026-11), a day (2026-11-30) or an ISO week (2026-W48)."`
	Format   []string `short:"f" default:"html" enum:"html,csv,json,parquet" help:"Formats to write: html, csv, json, parquet (repeat or separate with commas)."`
	Team     []string `help:"Cut the report to these teams' own figures (every format alike: no other team, no fleet-wide figure); default the whole fleet."`
	Output   string   `short:"o" name:"output" placeholder:"DIR" help:"Directory to write to (default reports.dir, <data_dir>/reports)."`
	Name     string   `default:"chargeback" help:"File name prefix: <name>-<period>.<format>."`
	TimeZone string   `name:"timezone" default:"UTC" help:"IANA time zone of the period's bounds."`

	out io.Writer
}

// Run refreshes the rollups, builds the report and writes its files, printing
// their paths and a summary.
func (r *ReportRunCmd) Run(g *Globals, ctx context.Context) error {
	out := stdout(r.out)
	p, err := reports.ParsePeriodIn(r.Period, r.TimeZone)
	if err != nil {
		return err
	}
	c, log, err := g.setup(func(c *config.Config) {
		setIf(&c.Reports.Dir, r.Output)
	})
	if err != nil {
		return err
	}
	st, err := backend.OpenMigrated(ctx, c.Store, log)
	if err != nil {
		return err
	}
	defer st.Close()
	rc := c.Reports
	rc.Refresh = true // on demand: always complete up to the period's end
	runner, err := billing.NewRunner(rc, st, billing.WithLogger(log))
	if err != nil {
		return err
	}
	return runner.GenerateTo(ctx, out, r.Name, p, r.Format, r.Team)
}
