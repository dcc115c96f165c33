package capacity

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/gpupool/gpupool/analyzer/pricebook"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
)

// Series is the hourly history of one cluster's cards of one type, GPUs averaged
// over each hour, from the capacity view; an hour the view has no row for is 0.
type Series struct {
	Cluster, Card string
	// Start is the first hour; the slices hold one value per hour from it.
	Start                     time.Time
	Capacity, Running, Queued []float64
	// Inventory is the GPUs of this cluster and card type that reported in the
	// history's last week (schemas.Units: whole GPUs and MIG slices apart); the
	// plan counts from it, not from a mean over hours that may lack data.
	Inventory schemas.Units
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

// inventorySQL is every GPU unit the chargeback counted in [from, to) (what
// the capacity view's capacity sums), with the last hour it did.
const inventorySQL = `SELECT gpu_uuid, any(cluster) AS cluster, any(card) AS card, any(mig_profile) AS mig_profile,
       max(hour) AS last_hour
FROM chargeback_hourly_current
WHERE hour >= {from:DateTime('UTC')} AND hour < {to:DateTime('UTC')}
GROUP BY gpu_uuid
HAVING card != ''
ORDER BY gpu_uuid`

// LoadHistory reads the hourly series of every cluster and card type in
// [from, to) (whole hours, UTC) from the capacity view, and their inventory
// from the chargeback's GPU-hours. Jobs that accept any card (card ”) are left out: no card
// type's demand holds them. A card type jobs asked for that no GPU of the
// cluster reported is left out too (Unserved names it).
func LoadHistory(ctx context.Context, q store.Querier, from, to time.Time) ([]Series, error) {
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
	rows := store.Read(res, "capacity: the capacity view")
	for rows.Next() {
		cluster, card, h := rows.Str("cluster"), rows.Str("card"), rows.Time("hour")
		if len(out) == 0 || out[len(out)-1].Cluster != cluster || out[len(out)-1].Card != card {
			out = append(out, Series{Cluster: cluster, Card: card, Start: from,
				Capacity: make([]float64, n), Running: make([]float64, n), Queued: make([]float64, n)})
		}
		s := &out[len(out)-1]
		if k := int(h.Sub(from) / time.Hour); k >= 0 && k < n {
			// NULL is NaN, as a figure the view did not have.
			s.Capacity[k], s.Running[k], s.Queued[k] = rows.FloatOr("capacity", math.NaN()), rows.FloatOr("running", math.NaN()), rows.FloatOr("queued", math.NaN())
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if err := loadInventory(ctx, q, from, to, out); err != nil {
		return nil, err
	}
	return out, nil
}

// loadInventory sets each series' Inventory: the units that reported in the
// week before the series' last hour with GPUs in it.
func loadInventory(ctx context.Context, q store.Querier, from, to time.Time, series []Series) error {
	res, err := q.Query(ctx, inventorySQL, store.Params{"from": from.Format(time.DateTime), "to": to.Format(time.DateTime)})
	if err != nil {
		return fmt.Errorf("capacity: read the inventory (chargeback_hourly_current): %w", err)
	}
	idx := map[[2]string]int{}
	for i, s := range series {
		idx[[2]string{s.Cluster, s.Card}] = i
	}
	rows := store.Read(res, "capacity: the inventory (chargeback_hourly_current)")
	for rows.Next() {
		cluster, card, profile, last := rows.Str("cluster"), rows.Str("card"), rows.Str("mig_profile"), rows.Time("last_hour")
		k, ok := idx[[2]string{cluster, card}]
		if !ok {
			continue
		}
		s := &series[k]
		_, end := s.span()
		if end > 0 && !last.Before(s.Start.Add(time.Duration(end-HoursPerWeek)*time.Hour)) {
			s.Inventory.Add(card, profile)
		}
	}
	return rows.Err()
}

// span is the hours [first, end) from the first to the last with GPUs in
// them; 0, 0 when there is none.
func (s Series) span() (first, end int) {
	end = len(s.Capacity)
	for end > 0 && s.Capacity[end-1] == 0 {
		end--
	}
	for first < end && s.Capacity[first] == 0 {
		first++
	}
	return first, end
}

// MinHistoryHours is the history a forecast needs: two weeks to fit a weekly
// season and a trend, one more to backtest them.
const MinHistoryHours = 3 * HoursPerWeek

// Short is a cluster and card type with too little history to forecast.
type Short struct {
	Cluster string `json:"cluster"`
	Card    string `json:"card"`
	// DataHours are the hours with GPUs in them; Inventory the GPUs there.
	DataHours int           `json:"data_hours"`
	Inventory schemas.Units `json:"inventory"`
}

// String says it plainly, in one line.
func (s Short) String() string {
	if s.DataHours == 0 || s.Inventory.GPUEquivalents == 0 {
		return fmt.Sprintf("%s/%s: jobs asked for this card type, but no GPU of it reported here in the history's last week: "+
			"no capacity to plan, no row", s.Cluster, s.Card)
	}
	return fmt.Sprintf("%s/%s: %.1f days of history (%d hours with GPUs reporting; %s); a forecast needs %d days "+
		"(two weeks to fit a weekly season and a trend, one to backtest them): no forecast or plan",
		s.Cluster, s.Card, float64(s.DataHours)/24, s.DataHours, s.Inventory, MinHistoryHours/24)
}

// Split trims each series to its hours from the first to the last with GPUs in
// them (hours before the data begins or not refreshed yet are no demand) and
// splits off those with less than MinHistoryHours of them, or no inventory.
func Split(series []Series) (fit []Series, short []Short) {
	for _, s := range series {
		first, end := s.span()
		s.Start = s.Start.Add(time.Duration(first) * time.Hour)
		s.Capacity, s.Running, s.Queued = s.Capacity[first:end], s.Running[first:end], s.Queued[first:end]
		hours := 0
		for _, c := range s.Capacity {
			if c > 0 {
				hours++
			}
		}
		if hours < MinHistoryHours || s.Inventory.GPUEquivalents == 0 {
			short = append(short, Short{Cluster: s.Cluster, Card: s.Card, DataHours: hours, Inventory: s.Inventory})
			continue
		}
		fit = append(fit, s)
	}
	return fit, short
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

// The forecast methods a Result names.
const (
	// MethodModel is the trend + hour-of-week season fitted by least squares.
	MethodModel = "trend+season"
	// MethodNaive repeats the history's last week (the seasonal-naive forecast),
	// used where it beat the model on the backtest.
	MethodNaive = "naive"
)

// Result is the forecast and plan of one cluster and card type.
type Result struct {
	Cluster string `json:"cluster"`
	Card    string `json:"card"`
	// HistoryHours is the history fitted (from its first hour with GPUs to its
	// last); DemandGPUs is its last week's mean, ForecastDemandGPUs and
	// ForecastCapacity the forecast's over the horizon (GPU-equivalents).
	HistoryHours int `json:"history_hours"`
	// Inventory is the GPUs that reported in the history's last week, whole GPUs
	// and MIG slices apart; CapacityGPUs is their GPU-equivalents.
	Inventory          schemas.Units `json:"inventory"`
	CapacityGPUs       float64       `json:"capacity_gpus"`
	DemandGPUs         float64       `json:"demand_gpus"`
	ForecastDemandGPUs float64       `json:"forecast_demand_gpus"`
	ForecastPeakGPUs   float64       `json:"forecast_peak_gpus"`
	ForecastCapacity   float64       `json:"forecast_capacity_gpus"`
	// TrendGPUsPerWeek is the demand's fitted trend (0 when Method is naive).
	TrendGPUsPerWeek float64 `json:"trend_gpus_per_week"`
	// Efficiency is the highest share of the GPUs there the history kept running.
	Efficiency float64 `json:"efficiency"`
	// Backtest is the demand forecast's error on the history's last week, beside
	// the naive one's; Method is the forecast the figures use: the model, or the
	// naive one where the model did not beat it.
	Backtest Backtest `json:"backtest"`
	Method   string   `json:"method"`
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

// Analyze forecasts and plans every series Split keeps; prices come from the
// price book at now.
func Analyze(ctx context.Context, prices *pricebook.Book, series []Series, now time.Time, o Options) ([]Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	fit, _ := Split(series)
	var out []Result
	for _, s := range fit {
		r, err := analyzeOne(s, o)
		if err != nil {
			return nil, fmt.Errorf("capacity: %s/%s: %w", s.Cluster, s.Card, err)
		}
		if price, cur, err := prices.PricePerGPUHour(ctx, s.Card, now); err == nil {
			cost := float64(r.Plan.ExtraGPUs) * price * HoursPerMonth
			r.Plan.PricePerGPUHour, r.Plan.Currency, r.Plan.CostPerMonth = &price, cur, &cost
		} else if !errors.Is(err, pricebook.ErrNoPrice) {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// forecaster forecasts a series hours ahead from the hour after it.
type forecaster func(y []float64, hours int) ([]float64, error)

func analyzeOne(s Series, o Options) (Result, error) {
	n := len(s.Running)
	demand := s.Demand()
	r := Result{Cluster: s.Cluster, Card: s.Card, HistoryHours: n, Inventory: s.Inventory, Method: MethodModel}
	bt, err := RunBacktest(s.Start, demand, HoursPerWeek)
	if err != nil {
		return r, err
	}
	r.Backtest = bt
	forecast := forecaster(func(y []float64, hours int) ([]float64, error) {
		m, err := Fit(s.Start, y)
		return m.Forecast(s.Start.Add(time.Duration(len(y))*time.Hour), hours), err
	})
	if !(bt.WAPE < bt.NaiveWAPE) {
		r.Method, forecast = MethodNaive, naiveForecast
	} else if dm, err := Fit(s.Start, demand); err == nil {
		r.TrendGPUsPerWeek = dm.Slope * HoursPerWeek
	}
	hours := o.Weeks * HoursPerWeek
	fd, err1 := forecast(demand, hours)
	fc, err2 := forecast(s.Capacity, hours)
	fw, err3 := forecast(Work(s.Running, s.Queued), hours)
	if err := errors.Join(err1, err2, err3); err != nil {
		return r, err
	}
	r.CapacityGPUs, r.DemandGPUs = s.Inventory.GPUEquivalents, mean(demand[n-HoursPerWeek:])
	for i := range s.Running {
		if s.Capacity[i] > 0 {
			r.Efficiency = math.Max(r.Efficiency, math.Min(1, s.Running[i]/s.Capacity[i]))
		}
	}
	if r.Efficiency == 0 {
		r.Efficiency = 1
	}
	r.ForecastDemandGPUs, r.ForecastPeakGPUs, r.ForecastCapacity = mean(fd), maxOf(fd), mean(fc)
	r.Start, r.Capacity, r.Demand = s.Start, s.Capacity, demand
	r.ForecastStart, r.ForecastCapacityHours, r.ForecastDemandHours = s.Start.Add(time.Duration(n)*time.Hour), fc, fd
	// Plan on today's GPUs: the capacity forecast says whether that changes.
	plan, err := PlanExtra(fw, r.CapacityGPUs, r.Efficiency, o.TargetP95.Hours(), o.MaxExtraGPUs)
	if err != nil {
		return r, err
	}
	lastWeek := n - HoursPerWeek
	r.Plan = Recommend(plan, fw, mean(s.Running[lastWeek:]), minOf(s.Queued[lastWeek:]), r.CapacityGPUs, r.Efficiency, o.MaxExtraGPUs)
	return r, nil
}

// naiveForecast repeats y's last week hours ahead.
func naiveForecast(y []float64, hours int) ([]float64, error) {
	if len(y) < HoursPerWeek {
		return nil, fmt.Errorf("capacity: naive forecast: %d hours: %w", len(y), ErrShortHistory)
	}
	last := y[len(y)-HoursPerWeek:]
	out := make([]float64, hours)
	for i := range out {
		out[i] = last[i%HoursPerWeek]
	}
	return out, nil
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

func minOf(xs []float64) float64 {
	m := math.Inf(1)
	for _, x := range xs {
		m = math.Min(m, x)
	}
	if math.IsInf(m, 1) {
		return 0
	}
	return m
}

func maxOf(xs []float64) float64 {
	m := 0.0
	for _, x := range xs {
		m = math.Max(m, x)
	}
	return m
}
