package capacity

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"text/tabwriter"
	"time"

	"github.com/gpupool/gpupool/analyzer/chargeback"
)

// Request is what `gpupool capacity` asks: Options over the history of the
// HistoryWeeks whole weeks before Now, written in Format (table or json).
type Request struct {
	Options
	HistoryWeeks int
	Now          time.Time
	Format       string
}

// Report loads the history, forecasts and plans it, and writes the result.
func Report(ctx context.Context, q Querier, w io.Writer, r Request) error {
	if r.HistoryWeeks < 3 {
		return fmt.Errorf("capacity: history of %d weeks: want at least 3 (two to fit, one to backtest)", r.HistoryWeeks)
	}
	if err := r.Options.Validate(); err != nil {
		return err
	}
	to := r.Now.UTC().Truncate(time.Hour)
	series, err := LoadHistory(ctx, q, to.Add(-time.Duration(r.HistoryWeeks*HoursPerWeek)*time.Hour), to)
	if err != nil {
		return err
	}
	res, err := Analyze(ctx, chargeback.NewPriceBook(q), series, to, r.Options)
	if err != nil {
		return err
	}
	if r.Format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	return WriteTable(w, res, r.Options)
}

// WriteTable writes results as an aligned table, a line per cluster and card type.
func WriteTable(w io.Writer, rs []Result, o Options) error {
	if len(rs) == 0 {
		_, err := fmt.Fprintln(w, "No cluster and card type has three weeks of history in the capacity view (refreshed hours, see docs/capacity.md).")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "cluster\tcard\tGPUs\tdemand\tforecast %dw\tpeak\ttrend/wk\tWAPE\tnaive\tp95 wait\t+GPUs for p95 ≤ %s\tcost/month\t\n", o.Weeks, o.TargetP95)
	for _, r := range rs {
		extra := fmt.Sprint(r.Plan.ExtraGPUs)
		if !r.Plan.Reached {
			extra = fmt.Sprintf("> %d", r.Plan.ExtraGPUs)
		}
		cost := "—"
		if r.Plan.CostPerMonth != nil {
			cost = fmt.Sprintf("%.0f %s", *r.Plan.CostPerMonth, r.Plan.Currency)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.1f\t%.1f\t%.1f\t%.1f\t%+.2f\t%s\t%s\t%s\t%s\t%s\t\n", r.Cluster, r.Card, r.CapacityGPUs,
			r.DemandGPUs, r.ForecastDemandGPUs, r.ForecastPeakGPUs, r.TrendGPUsPerWeek,
			pct(r.Backtest.WAPE), pct(r.Backtest.NaiveWAPE), hours(r.Plan.P95Hours), extra, cost)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "\nGPUs and demand: last week's means; forecast: trend + hour-of-week season (docs/capacity.md); "+
		"WAPE: backtest on the last week, naive: same hour a week before; p95 wait: the forecast demand on today's GPUs.")
	return err
}

func pct(f float64) string {
	if math.IsNaN(f) {
		return "—"
	}
	return fmt.Sprintf("%.0f%%", 100*f)
}

func hours(h float64) string {
	if math.IsInf(h, 1) {
		return "∞"
	}
	return (time.Duration(h * float64(time.Hour))).Round(time.Minute).String()
}
