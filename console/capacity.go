package console

import (
	"context"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpupool/gpupool/analyzer/findings"
	"github.com/gpupool/gpupool/reports"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
)

// capacityDailySQL is capacity and demand per card type and day, in GPU-hours,
// from the capacity view (allocated + queued against what reported).
const capacityDailySQL = `SELECT toDate(hour) AS day, card,
    sum(capacity_gpus) AS capacity_gpu_hours, sum(running_gpus) AS running_gpu_hours,
    sum(active_gpus) AS active_gpu_hours, sum(queued_gpus) AS queued_gpu_hours,
    uniqExact(hour) AS hours
FROM capacity
WHERE hour >= {from:DateTime('UTC')} AND hour < {to:DateTime('UTC')}
GROUP BY day, card
ORDER BY card, day`

// waitByCardSQL is the queue wait per requested card type.
const waitByCardSQL = `SELECT toString(requested_card) AS card, count() AS jobs,
    quantile(0.5)(queue_wait_hours) AS p50_hours, quantile(0.95)(queue_wait_hours) AS p95_hours
FROM queue_wait
WHERE submit_time >= {from:DateTime64(3, 'UTC')} AND submit_time < {to:DateTime64(3, 'UTC')}
GROUP BY card ORDER BY card`

// horizonDays is how far the forecast looks.
const horizonDays = 28

type capacityCard struct {
	Card string
	// Mean GPUs over the last day: capacity, running (allocated), active, queued.
	Capacity, Running, Active, Queued float64
	WaitP50, WaitP95                  float64
	WaitJobs                          int64
	// Slope is the demand trend in GPUs per week; Forecast the demand at the
	// horizon's end; ShortDays the forecast days where demand exceeds capacity
	// (with Added cards, ShortDaysAdded).
	Slope, Forecast           float64
	ShortDays, ShortDaysAdded int
	Points                    int
	WrongCardGPUs             float64
	Recommended               map[string]float64
	Chart                     template.HTML
}

type capacityData struct {
	Weeks      int
	AddCard    string
	Add        int
	From, To   time.Time
	Cards      []capacityCard
	Assumption string
	// T is the cards' order and page (the card select offers every card).
	T    *tableView
	Rows []capacityCard
}

// capacityTable is the capacity per card type's order: by card by default.
var capacityTable = &tableDef{name: "capacity", id: "capacity", sort: "card", cols: []sortCol{
	{Key: "card", Label: "Card"}, {Key: "capacity", Label: "Capacity GPUs", Num: true, Desc: true},
	{Key: "allocated", Label: "Allocated", Num: true, Desc: true}, {Key: "active", Label: "Active", Num: true, Desc: true},
	{Key: "queued", Label: "Queued", Num: true, Desc: true}, {Key: "p50", Label: "Wait p50 h", Num: true, Desc: true},
	{Key: "p95", Label: "Wait p95 h", Num: true, Desc: true}, {Key: "trend", Label: "Trend GPUs/week", Num: true, Desc: true},
	{Key: "forecast", Label: "Demand in 4 weeks", Num: true, Desc: true}, {Key: "short", Label: "Days short", Num: true, Desc: true},
	{Key: "short_added", Label: "…after buying", Num: true, Desc: true},
}}

var capacityCmps = map[string]func(a, b capacityCard) int{
	"card":        byStr(func(c capacityCard) string { return c.Card }),
	"capacity":    byNum(func(c capacityCard) float64 { return c.Capacity }),
	"allocated":   byNum(func(c capacityCard) float64 { return c.Running }),
	"active":      byNum(func(c capacityCard) float64 { return c.Active }),
	"queued":      byNum(func(c capacityCard) float64 { return c.Queued }),
	"p50":         byNum(func(c capacityCard) float64 { return c.WaitP50 }),
	"p95":         byNum(func(c capacityCard) float64 { return c.WaitP95 }),
	"trend":       byNum(func(c capacityCard) float64 { return c.Slope }),
	"forecast":    byNum(func(c capacityCard) float64 { return c.Forecast }),
	"short":       byNum(func(c capacityCard) int { return c.ShortDays }),
	"short_added": byNum(func(c capacityCard) int { return c.ShortDaysAdded }),
}

func (c *Console) capacityPage(ctx context.Context, r *http.Request, v viewer) (any, error) {
	q := r.URL.Query()
	tv, err := parseTable(r, capacityTable)
	if err != nil {
		return nil, err
	}
	d := &capacityData{Weeks: 4, AddCard: q.Get("card"), T: tv}
	for name, dst := range map[string]*int{"weeks": &d.Weeks, "add": &d.Add} {
		if s := q.Get(name); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 || n > 10000 || (name == "weeks" && n < 1) {
				return nil, fmt.Errorf("%w: %s %q: want a whole number (weeks 1 or more)", errNotFound, name, s)
			}
			*dst = n
		}
	}
	now := c.now(ctx)
	d.To = now.Truncate(24 * time.Hour).Add(24 * time.Hour)
	d.From = d.To.AddDate(0, 0, -7*d.Weeks)
	res, err := c.query(ctx, "capacity", capacityDailySQL, store.Params{"from": d.From.Format(time.DateTime), "to": d.To.Format(time.DateTime)})
	if err != nil {
		return nil, err
	}
	type day struct {
		t                          time.Time
		cap, run, act, queued, hrs float64
	}
	byCard := map[string][]day{}
	var order []string
	for i := range res.n() {
		card := res.str(i, "card")
		if _, ok := byCard[card]; !ok {
			order = append(order, card)
		}
		byCard[card] = append(byCard[card], day{t: res.time(i, "day"), cap: res.num0(i, "capacity_gpu_hours"), run: res.num0(i, "running_gpu_hours"),
			act: res.num0(i, "active_gpu_hours"), queued: res.num0(i, "queued_gpu_hours"), hrs: res.num0(i, "hours")})
	}
	waits, err := c.query(ctx, "wait by card", waitByCardSQL, store.Params{"from": tsParam(d.From), "to": tsParam(now)})
	if err != nil {
		return nil, err
	}
	wrong, err := findings.Episodes(ctx, c.st, findings.EpisodeFilter{From: now.Add(-time.Hour), Kind: schemas.KindWrongCard})
	if err != nil {
		return nil, fmt.Errorf("console: capacity: %w", err)
	}
	var absent []string
	for _, card := range order {
		days := byCard[card]
		// A row per card type there is: demand for any card, or for a type no
		// GPU of which reported, has no capacity to hold it (a row with capacity
		// 0 and every day short says nothing true); the note names it.
		capGPUHours := 0.0
		for _, dd := range days {
			capGPUHours += dd.cap
		}
		if capGPUHours == 0 || card == "" {
			name := card
			if card == "" {
				name = "any card"
			}
			absent = append(absent, name)
			continue
		}
		cc := capacityCard{Card: card, Recommended: map[string]float64{}}
		// Mean GPUs per day: GPU-hours over the hours the day has data for.
		var xs, ys []float64
		labels := []string{}
		capS, demS, fcS := []float64{}, []float64{}, []float64{}
		for _, dd := range days {
			h := math.Max(dd.hrs, 1)
			labels = append(labels, dd.t.Format("01-02"))
			capS, demS, fcS = append(capS, dd.cap/h), append(demS, (dd.run+dd.queued)/h), append(fcS, nan)
			xs, ys = append(xs, float64(dd.t.Sub(d.From)/(24*time.Hour))), append(ys, (dd.run+dd.queued)/h)
		}
		last := days[len(days)-1]
		lh := math.Max(last.hrs, 1)
		cc.Capacity, cc.Running, cc.Active, cc.Queued = last.cap/lh, last.run/lh, last.act/lh, last.queued/lh
		cc.Points = len(xs)
		a, b := linearFit(xs, ys)
		cc.Slope = b * 7
		added := 0.0
		if d.AddCard == card {
			added = float64(d.Add)
		}
		fcS[len(fcS)-1] = demS[len(demS)-1]
		lastX := xs[len(xs)-1]
		for k := 1; k <= horizonDays; k++ {
			x := lastX + float64(k)
			f := math.Max(a+b*x, 0)
			labels = append(labels, last.t.AddDate(0, 0, k).Format("01-02"))
			capS, demS, fcS = append(capS, cc.Capacity+added), append(demS, nan), append(fcS, f)
			if f > cc.Capacity {
				cc.ShortDays++
			}
			if f > cc.Capacity+added {
				cc.ShortDaysAdded++
			}
			cc.Forecast = f
		}
		series := []reports.Series{{Name: "capacity", Values: capS}, {Name: "demand", Values: demS}, {Name: "forecast", Values: fcS}}
		cc.Chart = reports.Lines(cc.Card+": GPUs, daily mean, and the forecast", "GPUs", labels, series)
		for i := range waits.n() {
			if waits.str(i, "card") == card {
				cc.WaitP50, cc.WaitP95, cc.WaitJobs = waits.num0(i, "p50_hours"), waits.num0(i, "p95_hours"), int64(waits.num0(i, "jobs"))
			}
		}
		for _, f := range wrong {
			if f.State != schemas.StateResolved && f.Card == card {
				g := float64(len(f.GPUUUIDs))
				cc.WrongCardGPUs += g
				cc.Recommended[f.Recommended] += g
			}
		}
		d.Cards = append(d.Cards, cc)
	}
	d.Rows = pageOf(tv, slices.Clone(d.Cards), capacityCmps)
	d.Assumption = fmt.Sprintf("Demand is allocated plus queued GPUs, as a daily mean. The forecast is a straight line (least squares) through the daily demand of the last %d week(s) shown, carried %d days ahead; capacity stays at its last day's level", d.Weeks, horizonDays)
	if d.Add > 0 && d.AddCard != "" {
		d.Assumption += fmt.Sprintf(", plus %d × %s bought now", d.Add, d.AddCard)
	}
	d.Assumption += ". With fewer than two days of data the line is flat."
	if len(absent) > 0 {
		d.Assumption += " Demand with no GPUs of its own, not shown as a row: " + strings.Join(absent, ", ") + "."
	}
	return d, nil
}

// linearFit is the least-squares line y = a + b·x (b 0 with fewer than two
// distinct x).
func linearFit(xs, ys []float64) (a, b float64) {
	n := float64(len(xs))
	if n == 0 {
		return 0, 0
	}
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx, sy, sxx, sxy = sx+xs[i], sy+ys[i], sxx+xs[i]*xs[i], sxy+xs[i]*ys[i]
	}
	den := n*sxx - sx*sx
	if n < 2 || den == 0 {
		return sy / n, 0
	}
	b = (n*sxy - sx*sy) / den
	return (sy - b*sx) / n, b
}
