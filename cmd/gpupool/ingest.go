package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/ingest"
	"github.com/gpupool/gpupool/internal/config"
	"github.com/gpupool/gpupool/store/backend"
	"github.com/gpupool/gpupool/store/chdb"
)

// IngestCmd runs ingest until interrupted.
type IngestCmd struct {
	Metrics string `help:"Address for /metrics, /healthz, /readyz (e.g. :9465); empty disables."`
}

// ingestDefaults are the defaults `gpupool ingest` starts from, the file over
// them: the embedded engine lean (chdb.Config.Lean: a process that only writes)
// and ingest.go_memory_limit_mib, which Run applies. The other commands keep the
// engine's defaults (they query).
func ingestDefaults() config.Config {
	c := config.Default()
	c.Store.CHDB = c.Store.CHDB.Lean()
	return c
}

// Run consumes the streams into the store.
func (i *IngestCmd) Run(g *Globals, ctx context.Context) error {
	c, log, err := g.setupOver(ingestDefaults(), withMetrics(i.Metrics))
	if err != nil {
		return err
	}
	c.Ingest.ApplyMemoryLimit(log)
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
	releaseProgramCode(c, log)
	return ing.Run(ctx)
}

// releaseProgramCode hands back the program's start-up code pages when ingest
// writes to a ClickHouse server (the embedded store releases them with the
// engine's): its packages' initialisation runs once.
func releaseProgramCode(c config.Config, log *slog.Logger) {
	if c.Store.Backend != backend.ClickHouse || !c.Store.CHDB.ReleaseStartupCode {
		return
	}
	before, after, err := chdb.ReleaseProgramCode()
	if err != nil {
		log.Warn("ingest: could not release the program's start-up code pages; it keeps them resident", "err", err)
		return
	}
	log.Info("ingest: released the program's start-up code pages", "file_rss_mib_before", before>>20, "file_rss_mib_after", after>>20)
}
