package console

import (
	"context"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"time"

	"github.com/gpupool/gpupool/reports/billing"
)

// The capacity page shows the scheduled report's capacity page
// (billing.BuildCapacity, itself analyzer/capacity's forecast, backtest and
// plan) as of the console's now: the same figures as the report and as
// `gpupool capacity` with the report's horizon and history, computed once, in
// analyzer/capacity. Its figures are fleet-wide per cluster and card type and
// name no team, so every reader of the console sees the same page.

// capacityRow is one cluster and card type of the page.
type capacityRow struct {
	billing.CapacityCard
	// Slices is the MIG slices of the inventory (Inventory.Slices()).
	Slices int
}

type capacityData struct {
	// At is the hour the history ends and the forecast starts.
	At   time.Time
	Page billing.CapacityPage
	// T is the table's order and page; Rows the rows it shows, Charts their
	// charts in the same order.
	T      *tableView
	Rows   []capacityRow
	Charts []template.HTML
}

// capacityTable is the capacity per cluster and card type's order: by cluster
// and card by default.
var capacityTable = &tableDef{name: "capacity", id: "capacity", sort: "cluster", cols: []sortCol{
	{Key: "cluster", Label: "Cluster"}, {Key: "card", Label: "Card"},
	{Key: "whole", Label: "GPUs", Num: true, Desc: true}, {Key: "slices", Label: "MIG slices", Num: true, Desc: true},
	{Key: "gpu_eq", Label: "GPU-eq", Num: true, Desc: true}, {Key: "demand", Label: "Demand", Num: true, Desc: true},
	{Key: "forecast", Label: "Forecast", Num: true, Desc: true}, {Key: "peak", Label: "Peak", Num: true, Desc: true},
	{Key: "trend", Label: "Trend /wk", Num: true, Desc: true}, {Key: "wape", Label: "WAPE", Num: true, Desc: true},
	{Key: "naive_wape", Label: "Naive WAPE", Num: true, Desc: true}, {Key: "method", Label: "Used"},
	{Key: "p95", Label: "p95 wait h", Num: true, Desc: true}, {Key: "extra", Label: "+GPUs", Num: true, Desc: true},
	{Key: "cost", Label: "Cost / month", Num: true, Desc: true},
}}

var capacityCmps = map[string]func(a, b capacityRow) int{
	"cluster":    byStr(func(c capacityRow) string { return c.Cluster + "/" + c.Card }),
	"card":       byStr(func(c capacityRow) string { return c.Card + "/" + c.Cluster }),
	"whole":      byNum(func(c capacityRow) int { return c.Inventory.Whole }),
	"slices":     byNum(func(c capacityRow) int { return c.Slices }),
	"gpu_eq":     byNum(func(c capacityRow) float64 { return c.CapacityGPUs }),
	"demand":     byNum(func(c capacityRow) float64 { return c.DemandGPUs }),
	"forecast":   byNum(func(c capacityRow) float64 { return c.ForecastDemandGPUs }),
	"peak":       byNum(func(c capacityRow) float64 { return c.ForecastPeakGPUs }),
	"trend":      byNum(func(c capacityRow) float64 { return c.TrendGPUsPerWeek }),
	"wape":       byNum(func(c capacityRow) float64 { return optVal(c.WAPE) }),
	"naive_wape": byNum(func(c capacityRow) float64 { return optVal(c.NaiveWAPE) }),
	"method":     byStr(func(c capacityRow) string { return c.Method }),
	"p95":        byNum(func(c capacityRow) float64 { return optVal(c.P95WaitHours) }),
	"extra":      byNum(func(c capacityRow) int { return c.ExtraGPUs }),
	"cost":       byNum(func(c capacityRow) float64 { return optVal(c.CostPerMonth) }),
}

func (c *Console) capacityPage(ctx context.Context, r *http.Request, _ viewer) (any, error) {
	tv, err := parseTable(r, capacityTable)
	if err != nil {
		return nil, err
	}
	// The history ends at the hour holding the console's now, as the report's
	// ends at its period's end (billing truncates to the hour).
	at := c.now(ctx).UTC().Truncate(time.Hour)
	page, err := billing.BuildCapacity(ctx, c.st, at)
	if err != nil {
		return nil, fmt.Errorf("console: capacity: %w", err)
	}
	d := &capacityData{At: at, Page: page, T: tv}
	rows := make([]capacityRow, len(page.Cards))
	for i, card := range page.Cards {
		rows[i] = capacityRow{CapacityCard: card, Slices: card.Inventory.Slices()}
	}
	d.Rows = pageOf(tv, slices.Clone(rows), capacityCmps)
	for _, row := range d.Rows {
		d.Charts = append(d.Charts, billing.CapacityChart(row.CapacityCard))
	}
	return d, nil
}
