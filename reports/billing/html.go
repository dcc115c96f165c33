package billing

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gpupool/gpupool/reports"
)

//go:embed report.html.tmpl
var htmlSource string

var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"money": moneyText,
	"count": func(v *float64) string { // output: "—" when nothing was reported, never 0
		if v == nil {
			return "—"
		}
		return strconv.FormatFloat(*v, 'f', 0, 64)
	},
	"hours": func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) },
	"gpus":  func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) },
	"optPct": func(v *float64) string {
		if v == nil {
			return "—"
		}
		return strconv.FormatFloat(*v*100, 'f', 1, 64) + " %"
	},
	"optHours": func(v *float64) string {
		if v == nil {
			return "—"
		}
		return strconv.FormatFloat(*v, 'f', 2, 64)
	},
	"pct":     func(v float64) string { return strconv.FormatFloat(v*100, 'f', 1, 64) + " %" },
	"change":  changeText,
	"fmtTime": func(t time.Time) string { return t.Format("2006-01-02 15:04") },
}).Parse(htmlSource))

// htmlPage is what the template renders: the report and its charts.
type htmlPage struct {
	R                              *Report
	CostChart, Heatmap, TrendChart template.HTML
	// CapacityCharts are R.Capacity.Cards' charts, in order.
	CapacityCharts []template.HTML
}

// WriteHTML writes r as one self-contained HTML page: CSS in the page, charts as
// inline SVG, no script and no external URL, so it opens offline, from a mail
// attachment or a Slack file, and prints to PDF.
func WriteHTML(w io.Writer, r *Report) error {
	page := htmlPage{R: r, CostChart: costChart(r), Heatmap: utilisationHeatmap(r), TrendChart: trendChart(r)}
	for _, c := range r.Capacity.Cards {
		page.CapacityCharts = append(page.CapacityCharts, capacityChart(c))
	}
	if err := htmlTemplate.Execute(w, page); err != nil {
		return fmt.Errorf("report: html: %w", err)
	}
	return nil
}

// costChart stacks each team's used and idle cost (GPU-hours when costs are not
// all known).
func costChart(r *Report) template.HTML {
	priced := true
	for _, t := range r.Teams {
		priced = priced && t.Cost != nil && t.IdleCost != nil
	}
	labels := make([]string, len(r.Teams))
	used, idle := make([]float64, len(r.Teams)), make([]float64, len(r.Teams))
	for i, t := range r.Teams {
		labels[i] = t.Team
		if priced {
			used[i], idle[i] = *t.Cost-*t.IdleCost, *t.IdleCost
		} else {
			used[i], idle[i] = t.GPUHours-t.IdleGPUHours, t.IdleGPUHours
		}
	}
	if priced {
		return reports.StackedBars("Cost by team: used and idle", r.Currency, labels,
			[]reports.Series{{Name: "used", Values: used}, {Name: "idle", Values: idle}})
	}
	return reports.StackedBars("GPU-hours by team: used and idle (some hours unpriced)", "GPU-h", labels,
		[]reports.Series{{Name: "used", Values: used}, {Name: "idle", Values: idle}})
}

// utilisationHeatmap draws mean SM activity per card type and hour of day.
func utilisationHeatmap(r *Report) template.HTML {
	var cards []string
	row := map[string]int{}
	for _, u := range r.Utilisation {
		if _, ok := row[u.Card]; !ok {
			row[u.Card] = len(cards)
			cards = append(cards, u.Card)
		}
	}
	cols := make([]string, 24)
	for h := range cols {
		cols[h] = strconv.Itoa(h)
	}
	values := make([][]float64, len(cards))
	for i := range values {
		values[i] = make([]float64, 24)
		for h := range values[i] {
			values[i][h] = math.NaN()
		}
	}
	for _, u := range r.Utilisation {
		if u.SMActiveMean != nil && u.HourOfDay >= 0 && u.HourOfDay < 24 {
			values[row[u.Card]][u.HourOfDay] = *u.SMActiveMean
		}
	}
	return reports.Heatmap("Mean SM activity by card type and hour of day", cards, cols, values)
}

// trendChart draws the idle cost (and the total cost beside it) per day.
func trendChart(r *Report) template.HTML {
	labels := make([]string, len(r.IdleTrend))
	idle, cost := make([]float64, len(r.IdleTrend)), make([]float64, len(r.IdleTrend))
	for i, p := range r.IdleTrend {
		labels[i] = p.Label
		idle[i], cost[i] = optNaN(p.IdleCost), optNaN(p.Cost)
	}
	return reports.Lines("Idle cost per "+trendUnit(r), r.Currency, labels,
		[]reports.Series{{Name: "idle cost", Values: idle}, {Name: "total cost", Values: cost}})
}

func trendUnit(r *Report) string {
	if len(r.IdleTrend) > 0 && strings.Contains(r.IdleTrend[0].Label, ":") { // "15:00"
		return "hour"
	}
	return "day"
}

func optNaN(v *float64) float64 {
	if v == nil {
		return math.NaN()
	}
	return *v
}

func moneyText(v *float64) string {
	if v == nil {
		return "—"
	}
	return strconv.FormatFloat(*v, 'f', 2, 64)
}

func changeText(v *float64) string {
	if v == nil {
		return "—"
	}
	s := strconv.FormatFloat(*v*100, 'f', 1, 64) + " %"
	if *v > 0 {
		s = "+" + s
	}
	return s
}
