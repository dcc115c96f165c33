package capacity

import (
	"math"
	"testing"
	"time"
)

// monday is a Monday 00:00 UTC: hour of the week 0.
var monday = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

// synthetic is a trend plus a weekly profile (busy weekday afternoons).
func synthetic(hours int, base, slopePerHour float64) []float64 {
	y := make([]float64, hours)
	for i := range y {
		t := monday.Add(time.Duration(i) * time.Hour)
		s := 0.0
		if t.Weekday() != time.Saturday && t.Weekday() != time.Sunday && t.Hour() >= 9 && t.Hour() < 18 {
			s = 20
		}
		y[i] = base + slopePerHour*float64(i) + s
	}
	return y
}

func TestFitRecoversTrendAndSeason(t *testing.T) {
	y := synthetic(6*HoursPerWeek, 40, 0.02)
	m, err := Fit(monday, y[:4*HoursPerWeek])
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(m.Slope-0.02) > 0.002 {
		t.Errorf("slope %v per hour, want 0.02", m.Slope)
	}
	sum := 0.0
	for _, s := range m.Season {
		sum += s
	}
	if math.Abs(sum) > 1e-9 {
		t.Errorf("season sums to %v, want 0", sum)
	}
	// Tuesday 14:00 is busy, Sunday 14:00 is not: 20 GPUs apart.
	if d := m.Season[24+14] - m.Season[6*24+14]; math.Abs(d-20) > 1 {
		t.Errorf("weekday − weekend afternoon = %v, want 20", d)
	}
	f := m.Forecast(monday.Add(4*HoursPerWeek*time.Hour), 2*HoursPerWeek)
	for i, v := range f {
		if want := y[4*HoursPerWeek+i]; math.Abs(v-want) > 1.5 {
			t.Fatalf("forecast hour %d: %v, want %v", i, v, want)
		}
	}
	if _, err := Fit(monday, y[:2*HoursPerWeek-1]); err == nil {
		t.Error("fitted less than two weeks")
	}
}

func TestBacktestBeatsNaiveOnTrend(t *testing.T) {
	y := synthetic(5*HoursPerWeek, 40, 0.05)
	b, err := RunBacktest(monday, y, HoursPerWeek)
	if err != nil {
		t.Fatal(err)
	}
	// The naive forecast misses a week of trend (0.05 × 168 = 8.4 GPUs an hour).
	if b.WAPE >= b.NaiveWAPE || b.WAPE > 0.03 {
		t.Errorf("WAPE %v, naive %v: want the model under 3 %% and better than naive", b.WAPE, b.NaiveWAPE)
	}
}

func TestWaitsAndP95(t *testing.T) {
	work := []float64{3, 3, 0, 0}
	w := Waits(work, 2)
	want := []float64{0.5, 1, 0, 0}
	for i := range want {
		if math.Abs(w[i]-want[i]) > 1e-12 {
			t.Fatalf("waits %v, want %v", w, want)
		}
	}
	if p := P95(w, work); p != 1 {
		t.Errorf("p95 %v, want 1 (half the work waits 1 h)", p)
	}
	if p := P95(Waits(work, 3), work); p != 0 {
		t.Errorf("p95 with 3 GPUs %v, want 0", p)
	}
	if !math.IsInf(Waits([]float64{1}, 0)[0], 1) {
		t.Error("no GPU: the wait must be infinite")
	}
	got := Work([]float64{4, 4, 4}, []float64{2, 3, 0})
	if got[0] != 6 || got[1] != 5 || got[2] != 1 {
		t.Errorf("work %v, want [6 5 1]: ran + backlog growth", got)
	}
}

func TestPlanExtra(t *testing.T) {
	// 8 GPUs; every day 10 hours of 12 GPU-hours of work, then 14 quiet hours.
	var work []float64
	for range 7 {
		for h := range 24 {
			if h < 10 {
				work = append(work, 12)
			} else {
				work = append(work, 0)
			}
		}
	}
	p, err := PlanExtra(work, 8, 1, 1, 64)
	if err != nil {
		t.Fatal(err)
	}
	// With c GPUs the backlog after 10 hours is 10·(12 − c) and waits (12 − c)·10/c:
	// at most 1 h needs c ≥ 120/11, so 11 GPUs, 3 more.
	if !p.Reached || p.ExtraGPUs != 3 || p.P95AfterHours > 1 || p.P95Hours <= 1 {
		t.Errorf("plan %+v, want 3 extra GPUs bringing p95 under 1 h", p)
	}
	if p, _ := PlanExtra(work, 8, 1, 0, 2); p.Reached || p.ExtraGPUs != 2 {
		t.Errorf("plan %+v: 2 more GPUs cannot reach 0 h", p)
	}
	if _, err := PlanExtra(work, 8, 0, 1, 2); err == nil {
		t.Error("efficiency 0 accepted")
	}
}
