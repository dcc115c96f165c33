package main

import (
	"context"
	"time"

	"github.com/gpupool/gpupool/analyzer/capacity"
	"github.com/gpupool/gpupool/store/backend"
)

// CapacityCmd forecasts demand and capacity and plans the GPUs a p95 wait needs.
type CapacityCmd struct {
	capacity.Options `embed:""`
	HistoryWeeks     int    `name:"history-weeks" default:"8" help:"Weeks of stored history to fit (at least 3)."`
	Format           string `short:"f" enum:"table,json" default:"table" help:"Output: table or json."`
}

// Run reads the capacity view and prints the forecast and plan.
func (c *CapacityCmd) Run(g *Globals, ctx context.Context) error {
	cfg, _, err := g.setup(nil)
	if err != nil {
		return err
	}
	st, err := backend.OpenExisting(ctx, cfg.Store, newLogger("error"), true)
	if err != nil {
		return err
	}
	defer st.Close()
	return capacity.Report(ctx, st, stdout(nil), capacity.Request{Options: c.Options, HistoryWeeks: c.HistoryWeeks, Now: time.Now(), Format: c.Format})
}
