package capacity

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gpupool/gpupool/analyzer/pricebook"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/schemas/textfmt"
	"github.com/gpupool/gpupool/store"
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
// Cluster and card types with too little history are named, with how much
// they have, and get no figures.
func Report(ctx context.Context, q store.Querier, w io.Writer, r Request) error {
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
	fit, short := Split(series)
	res, err := Analyze(ctx, pricebook.New(q), fit, to, r.Options)
	if err != nil {
		return err
	}
	if r.Format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Results []Result `json:"results"`
			Short   []Short  `json:"too_little_history"`
		}{res, short})
	}
	if len(res) > 0 || len(short) == 0 {
		if err := WriteTable(w, res, r.Options); err != nil {
			return err
		}
	}
	return WriteShort(w, short)
}

// WriteShort names the cluster and card types with too little history.
func WriteShort(w io.Writer, short []Short) error {
	if len(short) == 0 {
		return nil
	}
	if _, err := fmt.Fprintf(w, "\nToo little history to forecast (%d cluster and card types):\n", len(short)); err != nil {
		return err
	}
	for _, s := range short {
		if _, err := fmt.Fprintln(w, "  "+s.String()); err != nil {
			return err
		}
	}
	return nil
}

// maxWidth is the widest line WriteTable writes, for a terminal (the demo's
// summary keeps to it too).
const maxWidth = 140

// WriteTable writes results as an aligned table, a line per cluster and card
// type, then a line per plan saying why.
func WriteTable(w io.Writer, rs []Result, o Options) error {
	if len(rs) == 0 {
		_, err := fmt.Fprintln(w, "No cluster and card type has three weeks of history in the capacity view (refreshed hours, see docs/capacity.md).")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "cluster\tcard\tinventory\tGPU-eq\tdemand\tforecast %dw\tpeak\ttrend/wk\tWAPE\tnaive\tused\tp95 wait\t\n", o.Weeks)
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.1f\t%.1f\t%.1f\t%.1f\t%+.2f\t%s\t%s\t%s\t%s\t\n", r.Cluster, r.Card, inventory(r.Inventory),
			r.CapacityGPUs, r.DemandGPUs, r.ForecastDemandGPUs, r.ForecastPeakGPUs, r.TrendGPUsPerWeek,
			pct(r.Backtest.WAPE), pct(r.Backtest.NaiveWAPE), r.Method, hours(r.Plan.P95Hours))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// The plan, a paragraph per cluster and card type: the GPUs to add and
	// what they cost a month, then why, wrapped to the terminal.
	fmt.Fprintf(w, "\nPlan for a p95 wait ≤ %s:\n", hours(o.TargetP95.Hours()))
	for _, r := range rs {
		extra := fmt.Sprintf("+%d GPUs", r.Plan.ExtraGPUs)
		if !r.Plan.Reached {
			extra = "more than " + extra
		}
		if r.Plan.CostPerMonth != nil {
			extra += fmt.Sprintf(", %.0f %s a month", *r.Plan.CostPerMonth, r.Plan.Currency)
		}
		line := fmt.Sprintf("%s/%s: %s (%s): %s.", r.Cluster, r.Card, extra, r.Plan.Basis, r.Plan.Why)
		fmt.Fprintln(w, textfmt.Wrap(line, maxWidth, "    "))
	}
	_, err := fmt.Fprintf(w, "\n%s\n%s\n%s\n%s\n%s\n",
		"Inventory: GPUs that reported in the last week, whole GPUs and MIG slices apart; GPU-eq weighs a slice by its compute share.",
		"Demand: last week's mean of running + queued GPUs. WAPE: the model's error on the last week, fitted on the weeks before;",
		"naive: the same for the naive forecast. Used: the forecast with the lower WAPE (naive repeats the last week); its figures fill the row.",
		"p95 wait: the forecast work's, on the GPUs there now.",
		fmt.Sprintf("Plan: whole cards that keep the p95 wait ≤ %s and serve any queue that stood through the last week; no price, no cost.", hours(o.TargetP95.Hours())))
	return err
}

// inventory is the table's inventory cell: whole GPUs and MIG slices, apart.
func inventory(u schemas.Units) string {
	if len(u.MIG) == 0 {
		return fmt.Sprint(u.Whole)
	}
	s := fmt.Sprintf("%d MIG", u.Slices())
	if u.Whole > 0 {
		s = fmt.Sprintf("%d + %s", u.Whole, s)
	}
	return s
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
	d := time.Duration(h * float64(time.Hour)).Round(time.Minute)
	if d == 0 {
		return "0m"
	}
	out := strings.TrimSuffix(d.String(), "0s")
	if strings.HasSuffix(out, "h0m") {
		out = strings.TrimSuffix(out, "0m")
	}
	return out
}
