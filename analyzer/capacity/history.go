package capacity

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/gpupool/gpupool/analyzer/chargeback"
	"github.com/gpupool/gpupool/store"
)

// Querier runs read-only SQL; store.Store implements it.
type Querier interface {
	Query(ctx context.Context, sql string, params store.Params) (*store.Result, error)
}

// Series is the hourly history of one cluster's cards of one type, GPUs averaged
// over each hour, from the capacity view; an hour the view has no row for is 0.
type Series struct {
	Cluster, Card string
	// Start is the first hour; the slices hold one value per hour from it.
	Start                     time.Time
	Capacity, Running, Queued []float64
}

// Demand is running + queued GPUs per hour.
func (s Series) Demand() []float64 {
	out := make([]float64, len(s.Running))
	for i := range out {
		out[i] = s.Running[i] + s.Queued[i]
	}
	return out
}

const historySQL = `SELECT cluster, card, hour,
       toFloat64(sum(capacity_gpus)) AS capacity, toFloat64(sum(running_gpus)) AS running,
       toFloat64(ifNull(sum(queued_gpus), 0)) AS queued
FROM capacity
WHERE hour >= {from:DateTime('UTC')} AND hour < {to:DateTime('UTC')} AND card != ''
GROUP BY cluster, card, hour
ORDER BY cluster, card, hour`

// LoadHistory reads the hourly series of every cluster and card type in
// [from, to) (whole hours, UTC) from the capacity view. Jobs that accept any card
// (card ”) are left out: no card type's demand holds them.
func LoadHistory(ctx context.Context, q Querier, from, to time.Time) ([]Series, error) {
	from, to = from.UTC().Truncate(time.Hour), to.UTC().Truncate(time.Hour)
	if !to.After(from) {
		return nil, fmt.Errorf("capacity: history %s to %s: empty", from.Format(time.RFC3339), to.Format(time.RFC3339))
	}
	res, err := q.Query(ctx, historySQL, store.Params{
		"from": from.Format(time.DateTime), "to": to.Format(time.DateTime),
	})
	if err != nil {
		return nil, fmt.Errorf("capacity: read the capacity view: %w", err)
	}
	n := int(to.Sub(from) / time.Hour)
	var out []Series
	for i, row := range res.Rows {
		cluster, _ := res.String(i, "cluster")
		card, _ := res.String(i, "card")
		h, ok := row[res.Index("hour")].(time.Time)
		if !ok {
			return nil, fmt.Errorf("capacity: read the capacity view: row %d: hour is not a time", i)
		}
		if len(out) == 0 || out[len(out)-1].Cluster != cluster || out[len(out)-1].Card != card {
			out = append(out, Series{Cluster: cluster, Card: card, Start: from,
				Capacity: make([]float64, n), Running: make([]float64, n), Queued: make([]float64, n)})
		}
		s := &out[len(out)-1]
		k := int(h.Sub(from) / time.Hour)
		if k < 0 || k >= n {
			continue
		}
		var e1, e2, e3 error
		s.Capacity[k], e1 = res.Float(i, "capacity")
		s.Running[k], e2 = res.Float(i, "running")
		s.Queued[k], e3 = res.Float(i, "queued")
		if err := errors.Join(e1, e2, e3); err != nil {
			return nil, fmt.Errorf("capacity: read the capacity view: %w", err)
		}
	}
	return out, nil
}

// Options set what Analyze forecasts and plans.
type Options struct {
	// Weeks is the forecast horizon, 4 to 12.
	Weeks int `default:"8" help:"Forecast horizon in weeks, 4 to 12."`
	// TargetP95 is the p95 queue wait the plan must keep to.
	TargetP95 time.Duration `name:"target-p95" default:"1h" help:"p95 queue wait the plan keeps to."`
	// MaxExtraGPUs bounds the plan's search.
	MaxExtraGPUs int `name:"max-extra-gpus" default:"512" help:"Most extra GPUs the plan considers per cluster and card type."`
}

// Validate checks the options.
func (o Options) Validate() error {
	var errs []error
	if o.Weeks < 4 || o.Weeks > 12 {
		errs = append(errs, fmt.Errorf("weeks %d: want 4 to 12", o.Weeks))
	}
	if o.TargetP95 < 0 {
		errs = append(errs, fmt.Errorf("target p95 wait %s: must not be negative", o.TargetP95))
	}
	if o.MaxExtraGPUs < 0 {
		errs = append(errs, fmt.Errorf("max extra GPUs %d: must not be negative", o.MaxExtraGPUs))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("capacity: %w", err)
	}
	return nil
}

// Result is the forecast and plan of one cluster and card type.
type Result struct {
	Cluster string `json:"cluster"`
	Card    string `json:"card"`
	// HistoryHours is the history fitted; the figures "now" are its last week's
	// means, the forecast ones over the horizon (GPUs).
	HistoryHours       int     `json:"history_hours"`
	CapacityGPUs       float64 `json:"capacity_gpus"`
	DemandGPUs         float64 `json:"demand_gpus"`
	ForecastDemandGPUs float64 `json:"forecast_demand_gpus"`
	ForecastPeakGPUs   float64 `json:"forecast_peak_gpus"`
	ForecastCapacity   float64 `json:"forecast_capacity_gpus"`
	// TrendGPUsPerWeek is the demand's trend.
	TrendGPUsPerWeek float64 `json:"trend_gpus_per_week"`
	// Efficiency is the highest share of the GPUs there the history kept running.
	Efficiency float64 `json:"efficiency"`
	// Backtest is the demand forecast's error on the history's last week.
	Backtest Backtest `json:"backtest"`
	Plan     Plan     `json:"plan"`
	// The hourly series behind the figures, for charts (the report's capacity
	// page): the history's capacity and demand from Start, and the forecast's
	// from ForecastStart (the hour after the history), over the horizon.
	Start                 time.Time `json:"-"`
	Capacity, Demand      []float64 `json:"-"`
	ForecastStart         time.Time `json:"-"`
	ForecastCapacityHours []float64 `json:"-"`
	ForecastDemandHours   []float64 `json:"-"`
}

// Analyze forecasts and plans every series; prices come from the price book at
// now. A series shorter than three weeks (two to fit, one to backtest) is skipped.
func Analyze(ctx context.Context, prices *chargeback.PriceBook, series []Series, now time.Time, o Options) ([]Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	var out []Result
	for _, s := range series {
		if len(s.Running) < 3*HoursPerWeek {
			continue
		}
		r, err := analyzeOne(s, o)
		if err != nil {
			return nil, fmt.Errorf("capacity: %s/%s: %w", s.Cluster, s.Card, err)
		}
		if price, cur, err := prices.PricePerGPUHour(ctx, s.Card, now); err == nil {
			cost := float64(r.Plan.ExtraGPUs) * price * HoursPerMonth
			r.Plan.PricePerGPUHour, r.Plan.Currency, r.Plan.CostPerMonth = &price, cur, &cost
		} else if !errors.Is(err, chargeback.ErrNoPrice) {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func analyzeOne(s Series, o Options) (Result, error) {
	n := len(s.Running)
	demand := s.Demand()
	r := Result{Cluster: s.Cluster, Card: s.Card, HistoryHours: n}
	bt, err := RunBacktest(s.Start, demand, HoursPerWeek)
	if err != nil {
		return r, err
	}
	r.Backtest = bt
	dm, err := Fit(s.Start, demand)
	if err != nil {
		return r, err
	}
	cm, err := Fit(s.Start, s.Capacity)
	if err != nil {
		return r, err
	}
	wm, err := Fit(s.Start, Work(s.Running, s.Queued))
	if err != nil {
		return r, err
	}
	r.TrendGPUsPerWeek = dm.Slope * HoursPerWeek
	last := n - HoursPerWeek
	r.CapacityGPUs, r.DemandGPUs = mean(s.Capacity[last:]), mean(demand[last:])
	for i := range s.Running {
		if s.Capacity[i] > 0 {
			r.Efficiency = math.Max(r.Efficiency, math.Min(1, s.Running[i]/s.Capacity[i]))
		}
	}
	if r.Efficiency == 0 {
		r.Efficiency = 1
	}
	from := s.Start.Add(time.Duration(n) * time.Hour)
	hours := o.Weeks * HoursPerWeek
	fd, fc := dm.Forecast(from, hours), cm.Forecast(from, hours)
	r.ForecastDemandGPUs, r.ForecastPeakGPUs = mean(fd), maxOf(fd)
	r.ForecastCapacity = mean(fc)
	r.Start, r.Capacity, r.Demand = s.Start, s.Capacity, demand
	r.ForecastStart, r.ForecastCapacityHours, r.ForecastDemandHours = from, fc, fd
	// Plan on today's GPUs: the capacity forecast says whether that changes.
	plan, err := PlanExtra(wm.Forecast(from, hours), math.Round(r.CapacityGPUs), r.Efficiency, o.TargetP95.Hours(), o.MaxExtraGPUs)
	if err != nil {
		return r, err
	}
	r.Plan = plan
	return r, nil
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func maxOf(xs []float64) float64 {
	m := 0.0
	for _, x := range xs {
		m = math.Max(m, x)
	}
	return m
}
