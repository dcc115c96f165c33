package main

import (
	"context"

	"github.com/gpupool/gpupool/ingest"
)

// IngestCmd runs ingest until interrupted.
type IngestCmd struct {
	Metrics string `help:"Address for /metrics, /healthz, /readyz (e.g. :9465); empty disables."`
}

// Run consumes the streams into the store.
func (i *IngestCmd) Run(g *Globals, ctx context.Context) error {
	c, err := g.loadConfig()
	if err != nil {
		return err
	}
	if i.Metrics != "" {
		c.MetricsListen = i.Metrics
	}
	if err := g.finish(&c); err != nil {
		return err
	}
	log := newLogger(c.LogLevel)
	b, err := openBus(ctx, c, "gpupool-ingest", log)
	if err != nil {
		return err
	}
	defer b.Close()
	s, err := openMigrated(ctx, c, log)
	if err != nil {
		return err
	}
	defer s.Close()
	reg := newRegistry()
	ing, err := ingest.New(c.Ingest, b.js, s, ingest.WithLogger(log), ingest.WithMetrics(ingest.NewMetrics(reg)))
	if err != nil {
		return err
	}
	if err := serveMetrics(ctx, c.MetricsListen, reg, b.ready, log); err != nil {
		return err
	}
	return ing.Run(ctx)
}
