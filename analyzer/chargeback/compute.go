package chargeback

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/gpupool/gpupool/store"
)

// Row is the chargeback of one job attempt on one card type over a period. The
// JSON names of the first ten fields are a public contract (gpupool analyze
// --format json prints them); the rest may grow.
type Row struct {
	Team    string `json:"team"`
	Project string `json:"project"`
	Job     string `json:"job"`
	// Card is the card type of the GPUs the attempt held ("H100-80GB").
	Card string `json:"card"`
	// GPUHours is the GPU time held in the period: GPUs × hours, a MIG instance
	// counting as its compute slices / 7, a shared GPU split by memory share.
	// GPUHours = UsedGPUHours + IdleGPUHours + UnmeasuredGPUHours.
	GPUHours float64 `json:"gpu_hours"`
	// IdleGPUHours is held time the GPU was measured and not active.
	IdleGPUHours float64 `json:"idle_gpu_hours"`
	// Cost is GPUHours priced hour by hour from the price book, in Currency; nil
	// when any of the hours has no price (UnpricedGPUHours says how many) or the
	// hours are priced in more than one currency. Never a silent 0.
	Cost *float64 `json:"cost"`
	// QueueWaitHours is submit to start of the attempt, counted when the attempt
	// started in the period.
	QueueWaitHours float64 `json:"queue_wait_hours"`
	// FailedRerunCost is Cost when the attempt failed and was rerun, else 0; nil
	// when such an attempt's cost is unknown.
	FailedRerunCost *float64 `json:"failed_rerun_cost"`
	// EnergyKWh is what the attempt's GPUs drew while it held them, from their
	// energy counters, shared like GPUHours.
	EnergyKWh float64 `json:"energy_kwh"`

	Pool      string `json:"pool"`
	ModelName string `json:"model_name"`
	// UsedGPUHours is held time the GPU was measured and active.
	UsedGPUHours float64 `json:"used_gpu_hours"`
	// UnmeasuredGPUHours is held time with no activity measurement.
	UnmeasuredGPUHours float64 `json:"unmeasured_gpu_hours"`
	// UnobservedGPUHours is the part of UnmeasuredGPUHours when the GPU sent no
	// sample at all (no telemetry: its collector was down or never ran). A job
	// nothing reported on is all unobserved: never used, never idle.
	UnobservedGPUHours float64 `json:"unobserved_gpu_hours"`
	// UnpricedGPUHours is the part of GPUHours with no price.
	UnpricedGPUHours float64 `json:"unpriced_gpu_hours"`
	// IdleCost is IdleGPUHours priced like Cost.
	IdleCost *float64 `json:"idle_cost"`
	// Currency of the costs; empty when nothing was priced.
	Currency string `json:"currency"`
	Attempt  uint32 `json:"attempt"`
	// Status is how the attempt ended (succeeded, failed, …); empty while it runs.
	Status  string `json:"status"`
	RerunOf string `json:"rerun_of,omitempty"`

	// Cluster the attempt's GPUs are in.
	Cluster string `json:"cluster"`
	// QueueWaitGPUHours is QueueWaitHours times the GPUs the attempt asked for.
	QueueWaitGPUHours float64 `json:"queue_wait_gpu_hours"`
	// QueueWaitCost is the opportunity cost of the wait: QueueWaitGPUHours at the
	// pool's queue-wait price (price book row queue-wait:<pool>), else at the
	// card's price, at the hour the attempt started; in QueueWaitCurrency. nil
	// when it waited and no price applies.
	QueueWaitCost     *float64 `json:"queue_wait_cost"`
	QueueWaitCurrency string   `json:"queue_wait_currency,omitempty"`
	// EnergyCost is EnergyKWh at the cluster's price per kWh (price book row
	// energy:<cluster>), hour by hour, in EnergyCurrency; nil when some of the
	// energy has no price.
	EnergyCost     *float64 `json:"energy_cost"`
	EnergyCurrency string   `json:"energy_currency,omitempty"`
}

// Compute returns the chargeback of every job attempt that held a GPU in
// [from, to), ordered by job. Whole hours the analyzer has refreshed are read
// from chargeback_hourly (what the finance views show); the rest of the period is
// computed live from the rollups, exact to the millisecond at the period's ends.
// So Compute needs no Refresh (gpupool analyze --trace calls none), and a month
// that Refresh keeps up costs a scan of its hourly rows, not of its GPU-minutes.
// An attempt still running is charged up to to: pass a to no later than now.
func Compute(ctx context.Context, q store.Querier, from, to time.Time) ([]Row, error) {
	src, p, err := periodRows(ctx, q, from, to)
	if err != nil {
		return nil, err
	}
	res, err := q.Query(ctx, renderReportOver(src, viewReportSources, jobKeys, ""), p)
	if err != nil {
		return nil, fmt.Errorf("chargeback: compute %s to %s: %w", p["from"], p["to"], err)
	}
	rows := store.Read(res, "chargeback: compute")
	out := make([]Row, 0, rows.Len())
	for rows.Next() {
		out = append(out, scanRow(rows))
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// scanRow reads a row of the report's columns. A NULL figure is NaN and a NULL
// or NaN amount nil: the chargeback's "unknown", kept apart from 0.
func scanRow(rows *store.Rows) Row {
	var r Row
	str := rows.Str
	num := func(name string) float64 { return rows.FloatOr(name, math.NaN()) }
	opt := func(name string) *float64 {
		if f := rows.NullFloat(name); f != nil && !math.IsNaN(*f) {
			return f
		}
		return nil
	}
	r.Team, r.Project, r.Job, r.Card = str("team"), str("project"), str("job"), str("card")
	r.Pool, r.ModelName, r.Currency = str("pool"), str("model_name"), str("currency")
	r.Status, r.RerunOf = str("status"), str("rerun_of")
	r.Cluster, r.QueueWaitCurrency, r.EnergyCurrency = str("cluster"), str("queue_wait_currency"), str("energy_currency")
	r.QueueWaitGPUHours = num("queue_wait_gpu_hours")
	r.QueueWaitCost, r.EnergyCost = opt("queue_wait_cost"), opt("energy_cost")
	r.GPUHours, r.UsedGPUHours, r.IdleGPUHours = num("gpu_hours"), num("used_gpu_hours"), num("idle_gpu_hours")
	r.UnmeasuredGPUHours, r.UnpricedGPUHours = num("unmeasured_gpu_hours"), num("unpriced_gpu_hours")
	r.UnobservedGPUHours = num("unobserved_gpu_hours")
	r.QueueWaitHours, r.EnergyKWh = num("queue_wait_hours"), num("energy_kwh")
	r.Cost, r.IdleCost, r.FailedRerunCost = opt("cost"), opt("idle_cost"), opt("failed_rerun_cost")
	r.Attempt = uint32(num("attempt"))
	return r
}

// Unallocated is the GPU time of one cluster's cards of one type that no job held
// in a period, reported apart from the jobs' chargeback.
type Unallocated struct {
	Cluster string `json:"cluster"`
	Card    string `json:"card"`
	// CapacityGPUHours is every GPU-hour the cards were there for: measured, or
	// held by a job.
	CapacityGPUHours    float64 `json:"capacity_gpu_hours"`
	AllocatedGPUHours   float64 `json:"allocated_gpu_hours"`
	UnallocatedGPUHours float64 `json:"unallocated_gpu_hours"`
	// UnallocatedActiveGPUHours is unallocated time the GPU was nevertheless
	// active: processes no job accounts for.
	UnallocatedActiveGPUHours float64 `json:"unallocated_active_gpu_hours"`
	// Cost prices UnallocatedGPUHours like Row.Cost; nil when unpriced.
	Cost      *float64 `json:"cost"`
	Currency  string   `json:"currency"`
	EnergyKWh float64  `json:"energy_kwh"`
}

// ComputeUnallocated returns the unallocated capacity of [from, to) per cluster and
// card type, computed like Compute (see unallocated_capacity for the daily view).
func ComputeUnallocated(ctx context.Context, q store.Querier, from, to time.Time) ([]Unallocated, error) {
	src, p, err := periodRows(ctx, q, from, to)
	if err != nil {
		return nil, err
	}
	sql := `SELECT
    x.cluster AS cluster, x.card AS card,
    anyIf(x.currency, x.priced = 1 AND x.job = '') AS currency,
    sum(x.gpu_hours) AS capacity_gpu_hours,
    sumIf(x.gpu_hours, x.job != '') AS allocated_gpu_hours,
    sumIf(x.gpu_hours, x.job = '') AS unallocated_gpu_hours,
    sumIf(x.used_gpu_hours, x.job = '') AS unallocated_active_gpu_hours,
    if(countIf(x.job = '' AND x.priced = 0) > 0 OR uniqExactIf(x.currency, x.job = '' AND x.priced = 1) > 1,
       NULL, ifNull(sumIf(x.cost, x.job = ''), 0)) AS cost,
    sumIf(x.energy_kwh, x.job = '') AS energy_kwh
FROM (
    SELECT c.cluster AS cluster, c.card AS card, c.job AS job, c.gpu_hours AS gpu_hours,
           c.used_gpu_hours AS used_gpu_hours, c.energy_kwh AS energy_kwh,
           toUInt8(ifNull(p.valid_to > c.hour, 0)) AS priced,
           if(priced = 1, toString(p.currency), '') AS currency,
           if(priced = 1, c.gpu_hours * toFloat64(p.price_per_gpu_hour), NULL) AS cost
    FROM (
` + src + `
    ) AS c
    ASOF LEFT JOIN (` + viewReportSources.Prices + `) AS p ON c.card = p.card AND c.hour >= p.valid_from
) AS x
GROUP BY cluster, card
ORDER BY cluster, card
SETTINGS join_use_nulls = 0`
	res, err := q.Query(ctx, sql, p)
	if err != nil {
		return nil, fmt.Errorf("chargeback: unallocated capacity %s to %s: %w", p["from"], p["to"], err)
	}
	rows := store.Read(res, "chargeback: unallocated capacity")
	out := make([]Unallocated, 0, rows.Len())
	for rows.Next() {
		// A NULL figure is NaN, a NULL or NaN cost nil (unpriced).
		nan := math.NaN()
		u := Unallocated{Cluster: rows.Str("cluster"), Card: rows.Str("card"), Currency: rows.Str("currency"),
			CapacityGPUHours: rows.FloatOr("capacity_gpu_hours", nan), AllocatedGPUHours: rows.FloatOr("allocated_gpu_hours", nan),
			UnallocatedGPUHours: rows.FloatOr("unallocated_gpu_hours", nan), UnallocatedActiveGPUHours: rows.FloatOr("unallocated_active_gpu_hours", nan),
			EnergyKWh: rows.FloatOr("energy_kwh", nan)}
		if cost := rows.FloatOr("cost", nan); !math.IsNaN(cost) {
			u.Cost = &cost
		}
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// periodRows returns a query with the core's columns for [from, to), and its
// parameters: the run of refreshed whole hours that starts at the period's first
// whole hour, read from chargeback_hourly_current, and the core over the rollups
// for the rest (the partial hour at each end, and hours not refreshed yet). A
// period's figures are the sum of its hours' (core.go cuts shared pieces at
// hours), so the parts add up to the live computation of the whole.
func periodRows(ctx context.Context, q store.Querier, from, to time.Time) (string, store.Params, error) {
	p, err := periodParams(from, to)
	if err != nil {
		return "", nil, fmt.Errorf("chargeback: %w", err)
	}
	from, to = from.UTC(), to.UTC()
	h1, h2 := from.Truncate(time.Hour), to.Truncate(time.Hour)
	if h1.Before(from) {
		h1 = h1.Add(time.Hour)
	}
	live := renderCore(rollupSources)
	if !h1.Before(h2) {
		return live, p, nil
	}
	res, err := q.Query(ctx, `SELECT min(hour) AS first, max(hour) AS last, uniqExact(hour) AS hours FROM chargeback_refreshes
WHERE hour >= {h1:DateTime64(3, 'UTC')} AND hour < {h2:DateTime64(3, 'UTC')}`,
		store.Params{"h1": timeParam(h1), "h2": timeParam(h2)})
	if err != nil {
		return "", nil, fmt.Errorf("chargeback: read refreshed hours: %w", err)
	}
	rows := store.Read(res, "chargeback: refreshed hours").At(0)
	n, first, last := rows.Int("hours"), rows.NullTime("first"), rows.NullTime("last")
	if err := rows.Err(); err != nil {
		return "", nil, err
	}
	if n == 0 || first == nil || last == nil || !first.Equal(h1) || int64(last.Sub(*first)/time.Hour)+1 != n {
		return live, p, nil // no refreshed run from the first hour: all live
	}
	end := last.Add(time.Hour)
	p["h1"], p["h2"] = timeParam(h1), timeParam(end)
	parts := []string{"SELECT " + hourlyColumns + " FROM chargeback_hourly_current\n" +
		"WHERE hour >= {h1:DateTime64(3, 'UTC')} AND hour < {h2:DateTime64(3, 'UTC')}"}
	rename := func(fromName, toName string) string {
		return strings.NewReplacer("{from:", "{"+fromName+":", "{to:", "{"+toName+":").Replace(live)
	}
	if from.Before(h1) {
		parts = append(parts, "SELECT "+hourlyColumns+" FROM (\n"+rename("from", "h1")+"\n)")
	}
	if end.Before(to) {
		parts = append(parts, "SELECT "+hourlyColumns+" FROM (\n"+rename("h2", "to")+"\n)")
	}
	return strings.Join(parts, "\nUNION ALL\n"), p, nil
}

// periodParams checks a period and returns it as the {from} and {to} parameters.
func periodParams(from, to time.Time) (store.Params, error) {
	if !to.After(from) {
		return nil, fmt.Errorf("%w: %s to %s", ErrBadPeriod, from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))
	}
	return store.Params{"from": timeParam(from), "to": timeParam(to)}, nil
}

// timeParam formats t as a DateTime64(3) query parameter.
func timeParam(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000") }
