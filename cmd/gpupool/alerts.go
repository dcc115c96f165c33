package main

import (
	"context"
	"errors"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/reports/alerts"
)

// AlertsCmd delivers findings and scheduler notices to Slack.
type AlertsCmd struct {
	Metrics string `help:"Address for /metrics, /healthz, /readyz (e.g. :9468); empty disables."`
}

// Run consumes the findings and scheduler notices on the bus and posts them to
// Slack, one message per finding, updated on escalation and resolution. What it has
// sent is kept on the bus (a key-value bucket), so a restart neither loses nor
// repeats an alert; while Slack is down the messages wait in the stream.
func (a *AlertsCmd) Run(g *Globals, ctx context.Context) error {
	c, log, err := g.setup(withMetrics(a.Metrics))
	if err != nil {
		return err
	}
	if !c.Alerts.Enabled() {
		return errors.New("alerts: no Slack destination configured; set alerts.webhook_url, or alerts.bot_token_file with alerts.default_channel (see deploy/gpupool.example.yaml)")
	}
	b, err := bus.Open(ctx, c.Bus, "gpupool-alerts", log)
	if err != nil {
		return err
	}
	defer b.Close()
	reg := newRegistry()
	al, err := alerts.New(c.Alerts, b.JS, alerts.WithLogger(log), alerts.WithMetrics(alerts.NewMetrics(reg)))
	if err != nil {
		return err
	}
	if err := serveMetrics(ctx, c.MetricsListen, c, reg, b.Ready, log); err != nil {
		return err
	}
	return al.Run(ctx)
}
