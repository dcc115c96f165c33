package capacity

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// HoursPerWeek is the seasonal period: the hours of a week.
const HoursPerWeek = 168

// ErrShortHistory means a series is shorter than two weeks, too short to fit a
// weekly season and a trend.
var ErrShortHistory = errors.New("history shorter than two weeks")

// Model is a fitted trend and weekly season of an hourly series: the value at
// hour t (hours since Start) is Intercept + Slope·t + Season[hour of the week].
type Model struct {
	// Start is the first hour of the history the model was fitted on (UTC).
	Start     time.Time
	Intercept float64
	// Slope is the trend, per hour.
	Slope float64
	// Season is the weekly profile, indexed by hour of the week (Monday 00:00
	// UTC is 0); it sums to 0.
	Season [HoursPerWeek]float64
}

// hourOfWeek is t's hour of the week, Monday 00:00 UTC = 0.
func hourOfWeek(t time.Time) int {
	t = t.UTC()
	return ((int(t.Weekday())+6)%7)*24 + t.Hour()
}

// Fit fits a Model to y, the hourly values from start (truncated to the hour).
func Fit(start time.Time, y []float64) (Model, error) {
	if len(y) < 2*HoursPerWeek {
		return Model{}, fmt.Errorf("capacity: fit: %d hours: %w", len(y), ErrShortHistory)
	}
	m := Model{Start: start.UTC().Truncate(time.Hour)}
	how := make([]int, len(y))
	for i := range y {
		how[i] = hourOfWeek(m.Start.Add(time.Duration(i) * time.Hour))
	}
	// Backfitting: the line through what the season leaves, then the season of
	// what the line leaves, until they settle (the joint least-squares fit; a
	// line fitted once through the raw series would take part of the season for
	// trend when the history is not whole weeks or the season is lopsided).
	deseason := make([]float64, len(y))
	for range fitRounds {
		for i, v := range y {
			deseason[i] = v - m.Season[how[i]]
		}
		m.Intercept, m.Slope = line(deseason)
		var sum [HoursPerWeek]float64
		var cnt [HoursPerWeek]int
		for i, v := range y {
			sum[how[i]] += v - (m.Intercept + m.Slope*float64(i))
			cnt[how[i]]++
		}
		mean := 0.0
		for k := range sum {
			m.Season[k] = 0
			if cnt[k] > 0 {
				m.Season[k] = sum[k] / float64(cnt[k])
			}
			mean += m.Season[k]
		}
		mean /= HoursPerWeek
		for k := range m.Season {
			m.Season[k] -= mean
		}
	}
	return m, nil
}

// fitRounds bounds the backfitting; it settles to 1e-9 in far fewer.
const fitRounds = 50

// line is the least-squares line a + b·t through y over t = 0..n-1.
func line(y []float64) (a, b float64) {
	n := float64(len(y))
	var st, sy, stt, sty float64
	for i, v := range y {
		t := float64(i)
		st, sy, stt, sty = st+t, sy+v, stt+t*t, sty+t*v
	}
	b = (n*sty - st*sy) / (n*stt - st*st)
	return (sy - b*st) / n, b
}

// At returns the model's value at hour t, at least 0.
func (m Model) At(t time.Time) float64 {
	h := t.UTC().Truncate(time.Hour)
	i := h.Sub(m.Start).Hours()
	return math.Max(0, m.Intercept+m.Slope*i+m.Season[hourOfWeek(h)])
}

// Forecast returns the model's values for hours hours from from (truncated to
// the hour).
func (m Model) Forecast(from time.Time, hours int) []float64 {
	out := make([]float64, hours)
	from = from.UTC().Truncate(time.Hour)
	for i := range out {
		out[i] = m.At(from.Add(time.Duration(i) * time.Hour))
	}
	return out
}

// Backtest is a forecast's error on history it was not fitted on.
type Backtest struct {
	// Hours forecast and compared.
	Hours int `json:"hours"`
	// WAPE is Σ|y − ŷ| / Σy over them; NaiveWAPE the same for the seasonal-naive
	// forecast (the same hour one week before). NaN when Σy is 0.
	WAPE      float64 `json:"wape"`
	NaiveWAPE float64 `json:"naive_wape"`
	// MAE is the mean absolute error, in the series' unit (GPUs).
	MAE float64 `json:"mae"`
}

// RunBacktest fits on all of y but its last holdout hours, forecasts those, and
// compares. y must hold at least two weeks before the holdout.
func RunBacktest(start time.Time, y []float64, holdout int) (Backtest, error) {
	if holdout <= 0 || holdout > len(y) {
		return Backtest{}, fmt.Errorf("capacity: backtest: holdout %d of %d hours", holdout, len(y))
	}
	train := y[:len(y)-holdout]
	m, err := Fit(start, train)
	if err != nil {
		return Backtest{}, fmt.Errorf("capacity: backtest: %w", err)
	}
	from := m.Start.Add(time.Duration(len(train)) * time.Hour)
	f := m.Forecast(from, holdout)
	var absErr, naiveErr, total float64
	for i, v := range y[len(train):] {
		absErr += math.Abs(v - f[i])
		naiveErr += math.Abs(v - y[len(train)+i-HoursPerWeek])
		total += math.Abs(v)
	}
	b := Backtest{Hours: holdout, MAE: absErr / float64(holdout), WAPE: math.NaN(), NaiveWAPE: math.NaN()}
	if total > 0 {
		b.WAPE, b.NaiveWAPE = absErr/total, naiveErr/total
	}
	return b, nil
}
