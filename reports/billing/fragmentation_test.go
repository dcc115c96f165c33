package billing

import (
	"math"
	"testing"
	"time"

	"github.com/gpupool/gpupool/store"
)

// TestReportFragmentation: the report's stranded GPU-hours per cluster and
// card are the integral of the scheduler's stored samples over the period
// (each sample until the next of its cluster and card, at most 15 minutes,
// counted in its own hour), computed here from the rows themselves; by hand,
// the fixture's H100 has 20 stranded GPU-minutes over 42 sampled minutes in
// November. A team's report has no fragmentation: it is the fleet's.
func TestReportFragmentation(t *testing.T) {
	s := loadFleet(t)
	period := november(t)
	r, err := Build(t.Context(), s, period)
	if err != nil {
		t.Fatal(err)
	}
	want := storedIntegral(t, s, period.From, period.To)
	if len(r.Fragmentation) != 2 || len(want) != 2 {
		t.Fatalf("fragmentation %+v, want c1's H100 and L40S (integrals %v)", r.Fragmentation, want)
	}
	for _, f := range r.Fragmentation {
		if w := want[f.Cluster+"/"+f.Card]; math.Abs(f.StrandedGPUHours-w) > 1e-6 {
			t.Errorf("%s %s: %v stranded GPU-h, the samples integrate to %v", f.Cluster, f.Card, f.StrandedGPUHours, w)
		}
	}
	h := r.Fragmentation[0]
	if h.Card != "H100-80GB" || !near(h.StrandedGPUHours, 20.0/60) || !near(h.SampledHours, 42.0/60) ||
		!near(h.MeanStrandedGPUs, round(20.0/42)) || h.MaxWaiting != 3 {
		t.Errorf("H100 %+v, want 1/3 stranded GPU-h over 0.7 h sampled, mean 20/42, 3 waiting at most", h)
	}
	if l := r.Fragmentation[1]; l.Card != "L40S-48GB" || l.StrandedGPUHours != 0 || !near(l.MeanFreeGPUs, 1) {
		t.Errorf("L40S %+v, want 0 stranded, 1 free on average", l)
	}
	if sc := Scoped(r, TeamScope("nlp")); sc.Fragmentation != nil {
		t.Errorf("nlp's report shows the fleet's fragmentation %+v", sc.Fragmentation)
	}
}

// storedIntegral reads scheduler_fragmentation's rows and integrates their
// stranded GPUs per cluster and card over the samples in [from, to): each
// until the next sample of its cluster and card, at most 15 minutes.
func storedIntegral(t *testing.T, s store.Store, from, to time.Time) map[string]float64 {
	t.Helper()
	res, err := s.Query(t.Context(), "SELECT ts, toString(cluster) AS cluster, toString(card) AS card, stranded FROM scheduler_fragmentation ORDER BY cluster, card, ts", nil)
	if err != nil {
		t.Fatal(err)
	}
	type sample struct {
		key      string
		ts       time.Time
		stranded float64
	}
	var xs []sample
	rows := store.Read(res, "scheduler_fragmentation")
	for rows.Next() {
		xs = append(xs, sample{rows.Str("cluster") + "/" + rows.Str("card"), rows.Time("ts"), rows.Float("stranded")})
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for i, x := range xs {
		if x.ts.Before(from) || !x.ts.Before(to) {
			continue
		}
		span := time.Duration(0)
		if i+1 < len(xs) && xs[i+1].key == x.key {
			span = min(xs[i+1].ts.Sub(x.ts), 15*time.Minute)
		}
		out[x.key] += x.stranded * span.Hours()
	}
	return out
}
