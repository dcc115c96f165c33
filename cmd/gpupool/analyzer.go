package main

import (
	"context"
	"errors"

	"github.com/gpupool/gpupool/analyzer"
	"github.com/gpupool/gpupool/analyzer/findings"
	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/internal/config"
	"github.com/gpupool/gpupool/store/backend"
)

// AnalyzerCommands are the analyzer's subcommands: the service, the offline
// analysis of a trace and the price book.
type AnalyzerCommands struct {
	Analyzer  AnalyzerCmd  `cmd:"" help:"Run the analyzer: every analyzer.interval, refresh chargeback and find idle, zombie, memory-bound, wrong-card and low-utilisation jobs; publish findings to NATS."`
	Analyze   AnalyzeCmd   `cmd:"" help:"Run a trace through ingest and the analyzer in a temporary store and print its findings and chargeback."`
	Pricebook PricebookCmd `cmd:"" help:"Load and check the price book (price per card type per hour)."`
}

// AnalyzerCmd runs the analyzer service until interrupted.
type AnalyzerCmd struct {
	Metrics string `help:"Address for /metrics, /healthz, /readyz (e.g. :9467; default analyzer.metrics_listen); empty disables."`
}

// Run connects the store and the bus, then passes every analyzer.interval.
func (a *AnalyzerCmd) Run(g *Globals, ctx context.Context) error {
	c, log, err := g.setup(func(c *config.Config) {
		setIf(&c.Analyzer.MetricsListen, a.Metrics)
	})
	if err != nil {
		return err
	}
	st, err := backend.OpenMigrated(ctx, c.Store, log)
	if err != nil {
		return err
	}
	defer st.Close()
	if c.Bus.URL == "" {
		log.Warn("no bus.url: findings go to an embedded NATS server only this process uses; set bus.url to reach the scheduler and the alerter")
	}
	b, err := bus.Open(ctx, c.Bus, "gpupool-analyzer", log)
	if err != nil {
		return err
	}
	defer b.Close()
	reg := newRegistry()
	svc, err := analyzer.New(c.Analyzer, st, analyzer.WithPublisher(findings.JetStreamPublisher{JS: b.JS}),
		analyzer.WithMetrics(analyzer.NewMetrics(reg)), analyzer.WithLogger(log))
	if err != nil {
		return err
	}
	listen := c.Analyzer.MetricsListen
	if listen == "" {
		listen = c.MetricsListen
	}
	ready := func() error { return errors.Join(b.Ready(), svc.Ready()) }
	if err := serveMetrics(ctx, listen, c, reg, ready, log); err != nil {
		return err
	}
	log.Info("analyzer running", "interval", c.Analyzer.Interval)
	return svc.Run(ctx)
}
