package simhistory

import (
	"math"
	"testing"
	"time"

	"github.com/gpupool/gpupool/analyzer/capacity"
	"github.com/gpupool/gpupool/collector/sim"
)

// monday is a Monday, 00:00 UTC: the history's weeks start on one.
var monday = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

// simSeries is five (or weeks) weeks of the default fleet at 10-minute ticks.
func simSeries(tb testing.TB, weeks int) []capacity.Series {
	tb.Helper()
	cfg := sim.DefaultConfig()
	cfg.Start, cfg.Tick = monday, 10*time.Minute
	s, err := Series(tb.Context(), cfg, weeks)
	if err != nil {
		tb.Fatal(err)
	}
	return s
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
			bt, err := capacity.RunBacktest(s.Start, s.Demand(), capacity.HoursPerWeek)
			if err != nil {
				b.Fatal(err)
			}
			sum := 0.0
			for _, v := range s.Demand()[len(s.Running)-capacity.HoursPerWeek:] {
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
		bt, err := capacity.RunBacktest(s.Start, s.Demand(), capacity.HoursPerWeek)
		if err != nil {
			t.Fatal(err)
		}
		if math.IsNaN(bt.WAPE) {
			continue
		}
		sum := 0.0
		for _, v := range s.Demand()[len(s.Running)-capacity.HoursPerWeek:] {
			sum += v
		}
		absErr, naiveErr = absErr+bt.WAPE*sum, naiveErr+bt.NaiveWAPE*sum
		t.Logf("%s/%s: WAPE %.3f, naive %.3f, MAE %.2f GPUs", s.Cluster, s.Card, bt.WAPE, bt.NaiveWAPE, bt.MAE)
	}
	if absErr == 0 || absErr > naiveErr {
		t.Errorf("forecast error %v, seasonal naive %v: want the model no worse", absErr, naiveErr)
	}
}
