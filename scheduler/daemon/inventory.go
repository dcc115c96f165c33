package daemon

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpupool/gpupool/scheduler/placement"
)

// How often a scheduler that places jobs compares its model's nodes with the
// nodes the collectors reported, and over how recent a window of samples.
const (
	inventoryEvery  = 5 * time.Minute
	inventoryWindow = 15 * time.Minute
)

// inventorySource says which nodes sampled GPUs in a window (audit.StoreInventory).
type inventorySource interface {
	Seen(ctx context.Context, from, to time.Time) ([]placement.Seen, error)
}

// inventoryCheck reconciles the model's nodes with the collectors' inventory
// (issue 36): a node in telemetry but not in the model is reported — the
// scheduler never places on it — as is a configured node that reports nothing
// or other GPUs than the model says. Each discrepancy is logged when it appears
// and when it goes, and counted by kind in a gauge.
type inventoryCheck struct {
	fleet placement.Fleet
	src   inventorySource
	log   *slog.Logger
	gauge *prometheus.GaugeVec
	now   func() time.Time
	// open are the discrepancies of the last check, by their line.
	open map[string]bool
}

// Metrics are the daemon's own metrics (the service's are scheduler.Metrics).
type Metrics struct {
	// InventoryDiscrepancies counts the inventory check's open discrepancies by kind.
	InventoryDiscrepancies *prometheus.GaugeVec
}

// NewMetrics creates the daemon's metrics and registers them with reg (nil: none).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "gpupool_scheduler_inventory_discrepancies",
		Help: "Nodes whose collectors' reports differ from the scheduler's model, by kind: unknown (reported, not configured: never placed on), missing (configured, silent), card, gpus.",
	}, []string{"kind"})
	if reg != nil {
		reg.MustRegister(g)
	}
	return &Metrics{InventoryDiscrepancies: g}
}

func newInventoryCheck(fleet placement.Fleet, src inventorySource, log *slog.Logger, reg prometheus.Registerer) *inventoryCheck {
	return &inventoryCheck{fleet: fleet, src: src, log: log, gauge: NewMetrics(reg).InventoryDiscrepancies, now: time.Now, open: map[string]bool{}}
}

// check runs one comparison.
func (c *inventoryCheck) check(ctx context.Context) ([]placement.Discrepancy, error) {
	now := c.now()
	seen, err := c.src.Seen(ctx, now.Add(-inventoryWindow), now)
	if err != nil {
		return nil, err
	}
	ds := c.fleet.Reconcile(seen)
	counts := map[string]float64{"unknown": 0, "missing": 0, "card": 0, "gpus": 0}
	open := make(map[string]bool, len(ds))
	for _, d := range ds {
		counts[d.Kind]++
		line := d.String()
		open[line] = true
		if !c.open[line] {
			c.log.Warn("inventory: "+line, "kind", d.Kind, "cluster", d.Cluster, "node", d.Node)
		}
	}
	for line := range c.open {
		if !open[line] {
			c.log.Info("inventory: resolved: " + line)
		}
	}
	c.open = open
	for k, n := range counts {
		c.gauge.WithLabelValues(k).Set(n)
	}
	return ds, nil
}

// run checks every inventoryEvery until ctx ends; a failed read is logged and
// retried at the next tick.
func (c *inventoryCheck) run(ctx context.Context) {
	t := time.NewTicker(inventoryEvery)
	defer t.Stop()
	for {
		if _, err := c.check(ctx); err != nil && ctx.Err() == nil {
			c.log.Warn("inventory: cannot compare the model's nodes with the collectors'", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
