package billing

import (
	"context"
	"fmt"
	"html/template"
	"math"
	"time"

	"github.com/gpupool/gpupool/analyzer/capacity"
	"github.com/gpupool/gpupool/analyzer/pricebook"
	"github.com/gpupool/gpupool/reports"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
)

// The capacity page's settings: the history it fits and what it plans for.
const (
	capacityHistoryWeeks = 8
	capacityHorizonWeeks = 4
	capacityTargetP95    = time.Hour
	capacityMaxExtraGPUs = 512
)

// CapacityPage is the report's capacity page: per cluster and card type, demand
// and capacity over the weeks before the period's end and their forecast
// (analyzer/capacity), with the assumption the forecast rests on.
type CapacityPage struct {
	HistoryWeeks   int     `json:"history_weeks"`
	HorizonWeeks   int     `json:"horizon_weeks"`
	TargetP95Hours float64 `json:"target_p95_hours"`
	// Assumption says how the forecast and the plan are made.
	Assumption string         `json:"assumption"`
	Cards      []CapacityCard `json:"cards"`
	// Skipped are the cluster/card types with less than three weeks of history.
	Skipped []string `json:"skipped"`
}

// CapacityCard is one cluster and card type: the analyzer's forecast and plan
// (capacity.Result; GPUs, "now" being the history's last week), and the daily
// means of capacity and demand the chart draws. A figure that cannot be computed
// (a WAPE over a week without demand, a wait on no GPUs) is null.
type CapacityCard struct {
	Cluster              string   `json:"cluster"`
	Card                 string   `json:"card"`
	CapacityGPUs         float64  `json:"capacity_gpus"`
	DemandGPUs           float64  `json:"demand_gpus"`
	ForecastDemandGPUs   float64  `json:"forecast_demand_gpus"`
	ForecastPeakGPUs     float64  `json:"forecast_peak_gpus"`
	ForecastCapacityGPUs float64  `json:"forecast_capacity_gpus"`
	TrendGPUsPerWeek     float64  `json:"trend_gpus_per_week"`
	WAPE                 *float64 `json:"wape"`
	NaiveWAPE            *float64 `json:"naive_wape"`
	P95WaitHours         *float64 `json:"p95_wait_hours"`
	// ExtraGPUs keep the p95 wait under the target (Reached false: even the
	// most the plan considers do not).
	ExtraGPUs int `json:"extra_gpus"`
	// Inventory is the GPUs there, whole GPUs and MIG slices apart
	// (CapacityGPUs is their GPU-equivalents); Method the forecast the figures
	// use (the model, or the naive one where it backtested better); Basis and
	// Why what set ExtraGPUs, in one line.
	Inventory    schemas.Units `json:"inventory"`
	Method       string        `json:"method"`
	Basis        string        `json:"basis"`
	Why          string        `json:"why"`
	Reached      bool          `json:"reached"`
	CostPerMonth *float64      `json:"cost_per_month"`
	Currency     string        `json:"currency"`
	History      []CapacityDay `json:"history"`
	Forecast     []CapacityDay `json:"forecast"`
}

// CapacityDay is one UTC day's mean GPUs.
type CapacityDay struct {
	Day          string  `json:"day"`
	CapacityGPUs float64 `json:"capacity_gpus"`
	DemandGPUs   float64 `json:"demand_gpus"`
}

// buildCapacity reads the capacity view over the history weeks before to and
// forecasts it. A series with less than three weeks of hours with GPUs in it
// (the view has a row only for refreshed hours) is skipped, not forecast from
// zeros; one whose last hours have none (not refreshed yet) ends before them.
func buildCapacity(ctx context.Context, q store.Querier, to time.Time) (CapacityPage, error) {
	to = to.UTC().Truncate(time.Hour)
	series, err := capacity.LoadHistory(ctx, q, to.Add(-capacityHistoryWeeks*capacity.HoursPerWeek*time.Hour), to)
	if err != nil {
		return CapacityPage{}, err
	}
	return capacityPage(ctx, pricebook.New(q), series, to)
}

// BuildCapacity is the report's capacity page as of to: what Build puts in
// Report.Capacity, for a reader that wants the same figures without the rest
// of the report (the console's capacity page).
func BuildCapacity(ctx context.Context, q store.Querier, to time.Time) (CapacityPage, error) {
	return buildCapacity(ctx, q, to)
}

// CapacityChart is the report's chart of one card: its daily capacity and
// demand, then their forecast.
func CapacityChart(c CapacityCard) template.HTML { return capacityChart(c) }

// capacityPage forecasts series and lays the page out.
func capacityPage(ctx context.Context, prices *pricebook.Book, series []capacity.Series, now time.Time) (CapacityPage, error) {
	o := capacity.Options{Weeks: capacityHorizonWeeks, TargetP95: capacityTargetP95, MaxExtraGPUs: capacityMaxExtraGPUs}
	page := CapacityPage{
		HistoryWeeks: capacityHistoryWeeks, HorizonWeeks: capacityHorizonWeeks, TargetP95Hours: capacityTargetP95.Hours(),
		Assumption: fmt.Sprintf("Demand is running plus queued GPUs, capacity the GPUs there, each an hourly mean of the capacity view "+
			"over the %d weeks before the period's end. The forecast of each is an additive linear trend plus an hour-of-week season "+
			"fitted by least squares (docs/capacity.md), carried %d weeks ahead; its error (WAPE) is backtested on the history's last "+
			"week beside the naive forecast's (the last week repeated), and the naive forecast is used where it does as well or better. The plan is the fewest extra GPUs for which the forecast "+
			"work's p95 queue wait stays at or under %g h on today's GPUs (those that reported in the last week), and the usable GPUs "+
			"(at the highest share of them the history kept running) hold what ran plus any queue that stood through the last week, "+
			"priced at the card's current price for 730 hours a month. The chart shows daily means (UTC).",
			capacityHistoryWeeks, capacityHorizonWeeks, capacityTargetP95.Hours()),
		Cards: []CapacityCard{}, Skipped: []string{},
	}
	// Hours before the data begins or not refreshed yet (a period that has not
	// ended) are no demand: Split trims them, and names the series with too
	// little history or no GPUs.
	fit, short := capacity.Split(series)
	for _, sh := range short {
		page.Skipped = append(page.Skipped, sh.Cluster+"/"+sh.Card)
	}
	rs, err := capacity.Analyze(ctx, prices, fit, now, o)
	if err != nil {
		return page, err
	}
	for _, r := range rs {
		page.Cards = append(page.Cards, CapacityCard{
			Cluster: r.Cluster, Card: r.Card,
			CapacityGPUs: round3(r.CapacityGPUs), DemandGPUs: round3(r.DemandGPUs),
			ForecastDemandGPUs: round3(r.ForecastDemandGPUs), ForecastPeakGPUs: round3(r.ForecastPeakGPUs),
			ForecastCapacityGPUs: round3(r.ForecastCapacity), TrendGPUsPerWeek: round3(r.TrendGPUsPerWeek),
			WAPE: finite(r.Backtest.WAPE), NaiveWAPE: finite(r.Backtest.NaiveWAPE), P95WaitHours: finite(r.Plan.P95Hours),
			ExtraGPUs: r.Plan.ExtraGPUs, Reached: r.Plan.Reached, CostPerMonth: r.Plan.CostPerMonth, Currency: r.Plan.Currency,
			Inventory: r.Inventory, Method: r.Method, Basis: r.Plan.Basis, Why: r.Plan.Why,
			History:  dailyMeans(r.Start, r.Capacity, r.Demand),
			Forecast: dailyMeans(r.ForecastStart, r.ForecastCapacityHours, r.ForecastDemandHours),
		})
	}
	return page, nil
}

// dailyMeans averages hourly capacity and demand from start per UTC day (a
// partial day: over its hours).
func dailyMeans(start time.Time, capacityGPUs, demand []float64) []CapacityDay {
	var out []CapacityDay
	n := 0
	for i := range capacityGPUs {
		day := start.Add(time.Duration(i) * time.Hour).UTC().Format(time.DateOnly)
		if len(out) == 0 || out[len(out)-1].Day != day {
			if n > 0 {
				out[len(out)-1].CapacityGPUs /= float64(n)
				out[len(out)-1].DemandGPUs /= float64(n)
			}
			out, n = append(out, CapacityDay{Day: day}), 0
		}
		out[len(out)-1].CapacityGPUs += capacityGPUs[i]
		out[len(out)-1].DemandGPUs += demand[i]
		n++
	}
	if n > 0 {
		out[len(out)-1].CapacityGPUs /= float64(n)
		out[len(out)-1].DemandGPUs /= float64(n)
	}
	for i := range out {
		out[i].CapacityGPUs, out[i].DemandGPUs = round3(out[i].CapacityGPUs), round3(out[i].DemandGPUs)
	}
	return out
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// finite is v rounded, or nil when it is NaN or infinite.
func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	r := round3(v)
	return &r
}

// capacityChart draws one card's daily capacity and demand, then their forecast
// (a line each, starting where the history ends).
func capacityChart(c CapacityCard) template.HTML {
	n := len(c.History) + len(c.Forecast)
	labels := make([]string, n)
	line := func() []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = math.NaN()
		}
		return v
	}
	capS, demS, fcapS, fdemS := line(), line(), line(), line()
	for i, d := range c.History {
		labels[i] = d.Day[5:] // MM-DD
		capS[i], demS[i] = d.CapacityGPUs, d.DemandGPUs
	}
	for k, d := range c.Forecast {
		i := len(c.History) + k
		labels[i] = d.Day[5:]
		fcapS[i], fdemS[i] = d.CapacityGPUs, d.DemandGPUs
	}
	if h := len(c.History); h > 0 && len(c.Forecast) > 0 {
		// The forecast lines start from the history's last day.
		fcapS[h-1], fdemS[h-1] = capS[h-1], demS[h-1]
	}
	return reports.Lines(c.Cluster+" "+c.Card+": GPUs per day, history and forecast", "GPUs", labels, []reports.Series{
		{Name: "capacity", Values: capS}, {Name: "demand", Values: demS},
		{Name: "forecast capacity", Values: fcapS}, {Name: "forecast demand", Values: fdemS},
	})
}
