package capacity

import (
	"math"
	"testing"
	"time"

	"github.com/gpupool/gpupool/collector/sim"
	"github.com/gpupool/gpupool/schemas"
)

// simSeries runs the default simulated fleet for a warm-up week (it starts empty,
// and its long jobs pile up at first) and then weeks more, and turns the weeks
// after the warm-up into the hourly series the capacity view would hold: per
// cluster and card type,
// the GPUs there, running and queued (jobs that accept any card count under the
// card they ran on, and not while they wait).
func simSeries(tb testing.TB, weeks int) []Series {
	tb.Helper()
	cfg := sim.DefaultConfig()
	cfg.Start, cfg.Tick = monday, 10*time.Minute
	fleet, err := sim.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	type job struct {
		cluster, card      string
		gpus               float64
		submit, start, end time.Time
	}
	jobs := map[string]*job{}
	nodeCard := map[string]string{}
	gpus := map[[2]string]float64{}
	for _, n := range fleet.Nodes() {
		nodeCard[n.Name()] = n.CardType()
		gpus[[2]string{n.Cluster(), n.CardType()}] += float64(cfg.GPUsPerNode)
	}
	first := monday.Add(HoursPerWeek * time.Hour)
	end := first.Add(time.Duration(weeks*HoursPerWeek) * time.Hour)
	for at := monday; at.Before(end); at = at.Add(cfg.Tick) {
		for _, e := range fleet.Advance(at) {
			j := jobs[e.Job]
			if j == nil {
				j = &job{cluster: e.Cluster}
				jobs[e.Job] = j
			}
			t := time.UnixMilli(e.TimeMs).UTC()
			switch e.Event {
			case schemas.EventSubmit:
				j.submit, j.card, j.gpus = t, e.Card, float64(e.GPUs)
			case schemas.EventStart:
				j.start = t
				if len(e.Nodes) > 0 {
					j.card = nodeCard[e.Nodes[0]]
				}
				if j.submit.IsZero() {
					j.submit = t
				}
				if j.gpus == 0 {
					j.gpus = float64(len(e.GPUUUIDs))
				}
			case schemas.EventEnd, schemas.EventPreempt:
				j.end = t
			}
		}
	}
	n := weeks * HoursPerWeek
	byKey := map[[2]string]*Series{}
	var keys [][2]string
	for k, g := range gpus {
		s := &Series{Cluster: k[0], Card: k[1], Start: first,
			Capacity: make([]float64, n), Running: make([]float64, n), Queued: make([]float64, n)}
		for i := range s.Capacity {
			s.Capacity[i] = g
		}
		byKey[k], keys = s, append(keys, k)
	}
	spread := func(dst []float64, from, to time.Time, gpus float64) {
		if to.IsZero() || to.After(end) {
			to = end
		}
		for h := from.Truncate(time.Hour); h.Before(to); h = h.Add(time.Hour) {
			k := int(h.Sub(first) / time.Hour)
			if k < 0 || k >= n {
				continue
			}
			lo, hi := maxTime(h, from), minTime(h.Add(time.Hour), to)
			dst[k] += gpus * hi.Sub(lo).Hours()
		}
	}
	for _, j := range jobs {
		s := byKey[[2]string{j.cluster, j.card}]
		if s == nil || j.submit.IsZero() {
			continue
		}
		queuedTo := j.start
		if queuedTo.IsZero() {
			queuedTo = j.end
		}
		spread(s.Queued, j.submit, queuedTo, j.gpus)
		if !j.start.IsZero() {
			spread(s.Running, j.start, j.end, j.gpus)
		}
	}
	out := make([]Series, 0, len(keys))
	for _, k := range keys {
		out = append(out, *byKey[k])
	}
	return out
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// BenchmarkForecastBacktestSim is the forecast's backtest on the simulator's
// history: five weeks of the default fleet (2 clusters × 4 nodes × 8 GPUs) after
// a warm-up week, each
// cluster and card type's demand (running + queued GPUs) fitted on four weeks and
// forecast for the fifth. It reports the fleet's WAPE (Σ|y − ŷ| / Σy over every
// series and hour), the seasonal-naive forecast's, and their ratio (under 1: the
// model beats naive).
func BenchmarkForecastBacktestSim(b *testing.B) {
	series := simSeries(b, 5)
	var absErr, naiveErr, total float64
	for b.Loop() {
		absErr, naiveErr, total = 0, 0, 0
		for _, s := range series {
			bt, err := RunBacktest(s.Start, s.Demand(), HoursPerWeek)
			if err != nil {
				b.Fatal(err)
			}
			sum := 0.0
			for _, v := range s.Demand()[len(s.Running)-HoursPerWeek:] {
				sum += v
			}
			if sum == 0 || math.IsNaN(bt.WAPE) {
				continue
			}
			absErr, naiveErr, total = absErr+bt.WAPE*sum, naiveErr+bt.NaiveWAPE*sum, total+sum
		}
	}
	if total == 0 {
		b.Fatal("the simulated fleet had no demand")
	}
	b.ReportMetric(absErr/total, "wape")
	b.ReportMetric(naiveErr/total, "naive_wape")
	b.ReportMetric(absErr/naiveErr, "wape/naive")
}

// TestForecastOnSim keeps the backtest honest on the simulator's history (four
// weeks fitted, the fifth forecast): every series backtests, and the fleet's
// forecast is no worse than seasonal naive. (With two weeks fitted it is: the
// trend of so short a history of a small, bursty fleet extrapolates noise.)
func TestForecastOnSim(t *testing.T) {
	series := simSeries(t, 5)
	var absErr, naiveErr float64
	for _, s := range series {
		bt, err := RunBacktest(s.Start, s.Demand(), HoursPerWeek)
		if err != nil {
			t.Fatal(err)
		}
		if math.IsNaN(bt.WAPE) {
			continue
		}
		sum := 0.0
		for _, v := range s.Demand()[len(s.Running)-HoursPerWeek:] {
			sum += v
		}
		absErr, naiveErr = absErr+bt.WAPE*sum, naiveErr+bt.NaiveWAPE*sum
		t.Logf("%s/%s: WAPE %.3f, naive %.3f, MAE %.2f GPUs", s.Cluster, s.Card, bt.WAPE, bt.NaiveWAPE, bt.MAE)
	}
	if absErr == 0 || absErr > naiveErr {
		t.Errorf("forecast error %v, seasonal naive %v: want the model no worse", absErr, naiveErr)
	}
}
