package billing

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/gpupool/gpupool/reports"
	"github.com/gpupool/gpupool/store"
)

// Formats a report is rendered in.
const (
	FormatHTML    = "html"
	FormatCSV     = "csv"
	FormatJSON    = "json"
	FormatParquet = reports.FormatParquet
)

// Formats are every format Render writes.
var Formats = []string{FormatHTML, FormatCSV, FormatJSON, FormatParquet}

// Render writes r in format (html, csv, json or parquet) to w. Every format
// renders the same Report: a report cut to some teams (Scoped) is cut in all of
// them alike.
func Render(w io.Writer, r *Report, format string) error {
	switch format {
	case FormatHTML:
		return WriteHTML(w, r)
	case FormatCSV:
		return WriteCSV(w, r)
	case FormatJSON:
		return WriteJSON(w, r)
	case FormatParquet:
		return WriteParquet(w, r)
	}
	return fmt.Errorf("report: format %q: %w", format, ErrUnknownFormat)
}

// WriteJSON writes r as one indented JSON object with the Report's stable keys;
// unknown money is null.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("report: json: %w", err)
	}
	return nil
}

// CSVHeader is the long-form CSV's header. Every figure of the report is one row:
// which section it belongs to, the keys that identify it (empty where they do not
// apply), the metric's name, its value and its unit. One file, one shape: a
// spreadsheet's pivot table or filter turns it into any breakdown (rows: team,
// columns: metric, filter: section = team), and the file never changes shape when
// a section or metric is added.
var CSVHeader = []string{"period", "section", "team", "project", "pool", "card", "job", "bucket", "metric", "value", "unit"}

// WriteCSV writes r as one long-form CSV (see CSVHeader). Unknown money is an
// empty value; numbers are plain decimals with a dot.
func WriteCSV(w io.Writer, r *Report) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader); err != nil {
		return fmt.Errorf("report: csv: %w", err)
	}
	if err := longRows(r, cw.Write); err != nil {
		return fmt.Errorf("report: csv: %w", err)
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("report: csv: %w", err)
	}
	return nil
}

// WriteParquet writes r as the CSV's long-form table (CSVHeader's columns) in
// Parquet: value is a nullable double (unknown money is NULL), the rest text.
func WriteParquet(w io.Writer, r *Report) error {
	res := &store.Result{}
	for _, c := range CSVHeader {
		typ := "String"
		if c == "value" {
			typ = "Nullable(Float64)"
		}
		res.Columns = append(res.Columns, store.ColumnMeta{Name: c, Type: typ})
	}
	vi := slices.Index(CSVHeader, "value")
	err := longRows(r, func(rec []string) error {
		row := make([]any, len(rec))
		for i, v := range rec {
			row[i] = v
		}
		row[vi] = nil
		if rec[vi] != "" {
			x, err := strconv.ParseFloat(rec[vi], 64)
			if err != nil {
				return fmt.Errorf("%s %s: value %q: %w", rec[1], rec[8], rec[vi], err)
			}
			row[vi] = x
		}
		res.Rows = append(res.Rows, row)
		return nil
	})
	if err != nil {
		return fmt.Errorf("report: parquet: %w", err)
	}
	if err := reports.WriteParquet(w, res); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// longRows gives emit every figure of r as one row of CSVHeader's columns, in
// the order of the report's sections. A report cut to some teams (r.Scope) has
// no fleet-wide figure: its fleet-only rows (unallocated capacity, attempts
// ended in the fleet) are not written at all rather than written as zeros.
func longRows(r *Report, emit func([]string) error) error {
	money := r.Currency
	period := r.Period.Label
	fleet := r.Scope == nil
	type keys struct{ team, project, pool, card, job, bucket string }
	var err error
	row := func(section string, k keys, metric, value, unit string) {
		if err == nil {
			err = emit([]string{period, section, k.team, k.project, k.pool, k.card, k.job, k.bucket, metric, value, unit})
		}
	}
	figures := func(section string, k keys, f Figures) {
		row(section, k, "jobs", strconv.FormatInt(f.Jobs, 10), "count")
		row(section, k, "gpu_hours", num(f.GPUHours), "GPU-h")
		row(section, k, "used_gpu_hours", num(f.UsedGPUHours), "GPU-h")
		row(section, k, "idle_gpu_hours", num(f.IdleGPUHours), "GPU-h")
		row(section, k, "unmeasured_gpu_hours", num(f.UnmeasuredGPUHours), "GPU-h")
		row(section, k, "unpriced_gpu_hours", num(f.UnpricedGPUHours), "GPU-h")
		row(section, k, "idle_ratio", num(round(f.IdleRatio())), "ratio")
		row(section, k, "cost", opt(f.Cost), money)
		row(section, k, "idle_cost", opt(f.IdleCost), money)
		row(section, k, "failed_rerun_gpu_hours", num(f.FailedRerunGPUHours), "GPU-h")
		row(section, k, "failed_rerun_cost", opt(f.FailedRerunCost), money)
		row(section, k, "queue_wait_hours", num(f.QueueWaitHours), "h")
		row(section, k, "energy_kwh", num(f.EnergyKWh), "kWh")
		row(section, k, "queue_wait_gpu_hours", num(f.QueueWaitGPUHours), "GPU-h")
		row(section, k, "queue_wait_cost", opt(f.QueueWaitCost), money)
		row(section, k, "energy_cost", opt(f.EnergyCost), money)
	}
	figures("total", keys{}, r.Totals.Figures)
	if fleet {
		row("total", keys{}, "unallocated_gpu_hours", num(r.Totals.UnallocatedGPUHours), "GPU-h")
		row("total", keys{}, "unallocated_cost", opt(r.Totals.UnallocatedCost), money)
	}
	figures("previous_total", keys{bucket: r.Previous.Label}, r.PreviousTotals)
	for _, c := range []struct {
		metric string
		v      *float64
	}{{"gpu_hours", r.Change.GPUHours}, {"cost", r.Change.Cost}, {"idle_gpu_hours", r.Change.IdleGPUHours},
		{"idle_cost", r.Change.IdleCost}, {"energy_kwh", r.Change.EnergyKWh}} {
		row("change", keys{bucket: r.Previous.Label}, c.metric, opt(c.v), "ratio")
	}
	lines := func(section string, ls []Line) {
		for _, l := range ls {
			// The cluster and model sections name their key in bucket, so that
			// the file keeps its shape.
			k := keys{team: l.Team, project: l.Project, card: l.Card, bucket: l.Cluster + l.Model}
			figures(section, k, l.Figures)
			row(section, k, "previous_gpu_hours", num(l.PreviousGPUHours), "GPU-h")
			row(section, k, "previous_cost", opt(l.PreviousCost), money)
			row(section, k, "cost_change", opt(l.CostChange), "ratio")
		}
	}
	lines("team", r.Teams)
	lines("project", r.Projects)
	lines("card", r.Cards)
	lines("cluster", r.Clusters)
	lines("model", r.Models)
	for _, u := range r.Unallocated {
		k := keys{card: u.Card}
		row("unallocated", k, "capacity_gpu_hours", num(u.CapacityGPUHours), "GPU-h")
		row("unallocated", k, "allocated_gpu_hours", num(u.AllocatedGPUHours), "GPU-h")
		row("unallocated", k, "unallocated_gpu_hours", num(u.UnallocatedGPUHours), "GPU-h")
		row("unallocated", k, "unallocated_cost", opt(u.UnallocatedCost), u.Currency)
	}
	for _, f := range r.Fragmentation {
		k := keys{card: f.Card, bucket: f.Cluster}
		row("fragmentation", k, "stranded_gpu_hours", num(f.StrandedGPUHours), "GPU-h")
		row("fragmentation", k, "mean_stranded_gpus", num(f.MeanStrandedGPUs), "GPUs")
		row("fragmentation", k, "mean_free_gpus", num(f.MeanFreeGPUs), "GPUs")
		row("fragmentation", k, "max_waiting", strconv.FormatInt(f.MaxWaiting, 10), "count")
		row("fragmentation", k, "sampled_hours", num(f.SampledHours), "h")
	}
	for _, wst := range r.TopWaste {
		k := keys{team: wst.Team, project: wst.Project, pool: wst.Pool, card: wst.Card, job: wst.Job}
		row("top_waste", k, "gpu_hours", num(wst.GPUHours), "GPU-h")
		row("top_waste", k, "idle_gpu_hours", num(wst.IdleGPUHours), "GPU-h")
		row("top_waste", k, "idle_ratio", num(wst.IdleRatio), "ratio")
		row("top_waste", k, "idle_cost", opt(wst.IdleCost), wst.Currency)
	}
	for _, f := range r.Findings {
		k := keys{team: f.Team, project: f.Project, pool: f.Pool, card: f.Card, job: f.Job, bucket: f.Kind + "/" + f.Severity}
		// waste_* are the episode's, not the period's share (see Finding).
		row("finding", k, "waste_gpu_hours", num(f.WasteGPUHours), "GPU-h")
		row("finding", k, "waste_cost", num(f.WasteCost), f.Currency)
		row("finding", k, "period_waste_gpu_hours", num(f.PeriodWasteGPUHours), "GPU-h")
		row("finding", k, "period_waste_cost", num(f.PeriodWasteCost), f.Currency)
		row("finding", k, "gpus", num(f.GPUs), "GPUs")
		row("finding", k, "episode", strconv.FormatInt(f.Episode, 10), "count")
		open := "0"
		if f.State != "resolved" {
			open = "1"
		}
		row("finding", k, "open_at_period_end", open, "count")
	}
	for _, q := range r.QueueWait {
		k := keys{team: q.Team, pool: q.Pool}
		row("queue_wait", k, "jobs", strconv.FormatInt(q.Jobs, 10), "count")
		row("queue_wait", k, "p50_hours", num(q.P50Hours), "h")
		row("queue_wait", k, "p95_hours", num(q.P95Hours), "h")
		row("queue_wait", k, "queued_gpu_hours", num(q.QueuedGPUHours), "GPU-h")
	}
	if fleet {
		row("failures", keys{}, "ended_attempts", strconv.FormatInt(r.EndedAttempts, 10), "count")
	}
	for _, fl := range r.Failures {
		k := keys{bucket: fl.Reason}
		row("failures", k, "attempts", strconv.FormatInt(fl.Attempts, 10), "count")
		row("failures", k, "rate", num(fl.Rate), "ratio")
		row("failures", k, "gpu_hours", num(fl.GPUHours), "GPU-h")
		row("failures", k, "cost", opt(fl.Cost), money)
		row("failures", k, "failed_rerun_cost", opt(fl.FailedRerunCost), money)
	}
	for _, o := range r.Output {
		k := keys{team: o.Team, bucket: o.Model}
		row("output", k, "jobs", strconv.FormatInt(o.Jobs, 10), "count")
		row("output", k, "reporting_jobs", strconv.FormatInt(o.ReportingJobs, 10), "count")
		row("output", k, "gpu_hours", num(o.GPUHours), "GPU-h")
		// Jobs that reported nothing: empty values (never 0) and no unit.
		perGPUHour, perCost := "", ""
		if o.Unit != "" {
			perGPUHour, perCost = o.Unit+"/GPU-h", fmt.Sprintf("%s per %d %s", money, o.PerUnits, o.Unit)
		}
		row("output", k, "units", opt(o.Units), o.Unit)
		row("output", k, "units_per_gpu_hour", opt(o.UnitsPerGPUHour), perGPUHour)
		row("output", k, "cost_per_units", opt(o.CostPerUnits), perCost)
	}
	for _, p := range r.IdleTrend {
		k := keys{bucket: p.Start.Format(time.RFC3339)}
		row("idle_trend", k, "idle_gpu_hours", num(p.IdleGPUHours), "GPU-h")
		row("idle_trend", k, "idle_cost", opt(p.IdleCost), money)
		row("idle_trend", k, "cost", opt(p.Cost), money)
	}
	for _, c := range r.Capacity.Cards {
		k := keys{card: c.Card, bucket: c.Cluster}
		row("capacity", k, "whole_gpus", strconv.Itoa(c.Inventory.Whole), "GPUs")
		row("capacity", k, "mig_slices", strconv.Itoa(c.Inventory.Slices()), "slices")
		row("capacity", k, "capacity_gpus", num(c.CapacityGPUs), "GPUs")
		row("capacity", k, "demand_gpus", num(c.DemandGPUs), "GPUs")
		row("capacity", k, "forecast_demand_gpus", num(c.ForecastDemandGPUs), "GPUs")
		row("capacity", k, "forecast_peak_gpus", num(c.ForecastPeakGPUs), "GPUs")
		row("capacity", k, "forecast_capacity_gpus", num(c.ForecastCapacityGPUs), "GPUs")
		row("capacity", k, "trend_gpus_per_week", num(c.TrendGPUsPerWeek), "GPUs/week")
		row("capacity", k, "wape", opt(c.WAPE), "ratio")
		row("capacity", k, "naive_wape", opt(c.NaiveWAPE), "ratio")
		row("capacity", k, "p95_wait_hours", opt(c.P95WaitHours), "h")
		row("capacity", k, "extra_gpus", strconv.Itoa(c.ExtraGPUs), "GPUs")
		row("capacity", k, "cost_per_month", opt(c.CostPerMonth), c.Currency)
	}
	for _, u := range r.Utilisation {
		k := keys{card: u.Card, bucket: strconv.Itoa(u.HourOfDay)}
		row("utilisation", k, "gpu_hours", num(u.GPUHours), "GPU-h")
		row("utilisation", k, "sm_active_mean", opt(u.SMActiveMean), "ratio")
		row("utilisation", k, "active_ratio", opt(u.ActiveRatio), "ratio")
	}
	return err
}

func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func opt(v *float64) string {
	if v == nil {
		return ""
	}
	return num(*v)
}
