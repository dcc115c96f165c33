package bench

import (
	"testing"
	"time"
)

// TestIngestLag: the lag is read off the two curves as if rows were stored in
// the order published, weighted by rows.
func TestIngestLag(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	for _, tc := range []struct {
		name     string
		samples  []procSample
		p50, p99 time.Duration
	}{
		{"nothing stored", []procSample{{at: at(0)}, {at: at(1), published: 100}}, 0, 0},
		{"stored a second behind", []procSample{
			{at: at(0)}, {at: at(1), published: 100}, {at: at(2), published: 200, stored: 100}, {at: at(3), published: 200, stored: 200},
		}, time.Second, time.Second},
		{"most rows quick, a few slow", []procSample{
			{at: at(0)}, {at: at(1), published: 1000}, {at: at(1.1), published: 1000, stored: 990}, {at: at(5), published: 1000, stored: 1000},
		}, 100 * time.Millisecond, 4 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ingestLag(tc.samples, 0.5, 0.995)
			if got[0] != tc.p50 || got[1] != tc.p99 {
				t.Errorf("p50, p99.5 = %v, %v; want %v, %v", got[0], got[1], tc.p50, tc.p99)
			}
		})
	}
}
