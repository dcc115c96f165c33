package main

import (
	"context"
	"time"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/ingest"
	"github.com/gpupool/gpupool/internal/config"
	"github.com/gpupool/gpupool/store/backend"
)

// IngestCmd runs ingest until interrupted.
type IngestCmd struct {
	Metrics string `help:"Address for /metrics, /healthz, /readyz (e.g. :9465); empty disables."`
}

// Run consumes the streams into the store, from config.IngestDefault.
func (i *IngestCmd) Run(g *Globals, ctx context.Context) error {
	g.base = new(config.IngestDefault())
	c, log, err := g.setup(withMetrics(i.Metrics))
	if err != nil {
		return err
	}
	b, err := bus.Open(ctx, c.Bus, "gpupool-ingest", log)
	if err != nil {
		return err
	}
	defer b.Close()
	s, err := backend.OpenMigrated(ctx, c.Store, log)
	if err != nil {
		return err
	}
	defer s.Close()
	reg := newRegistry()
	ing, err := ingest.New(c.Ingest, b.JS, s, ingest.WithLogger(log), ingest.WithMetrics(ingest.NewMetrics(reg)), ingest.WithRawRetention(time.Duration(c.Store.RawTTLDays)*24*time.Hour))
	if err != nil {
		return err
	}
	if err := serveMetrics(ctx, c.MetricsListen, c, reg, b.Ready, log); err != nil {
		return err
	}
	c.Ingest.ApplyProcess(c.Store.Backend == backend.ClickHouse && c.Store.CHDB.ReleaseStartupCode, log)
	return ing.Run(ctx)
}
