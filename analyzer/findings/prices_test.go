package findings

import (
	"log/slog"
	"testing"
	"time"
)

func TestRecommend(t *testing.T) {
	opts := defaultCardOptions()
	tests := []struct {
		name      string
		prices    Prices
		card      string
		needMiB   float64
		want      string
		wantPrice float64 // proposed price per GPU-hour, 0 when unpriced
	}{
		{"small job: a slice of its own card", testPrices, "H100-80GB", 6000, "MIG 1g.10gb of H100-80GB", 4.0 / 7},
		{"15 GB: an L4 is cheaper than two slices", testPrices, "H100-80GB", 15000, "L4-24GB", 0.8},
		{"15 GB without L4s: two slices", fakePrices{"H100-80GB": 4}, "H100-80GB", 15000, "MIG 2g.20gb of H100-80GB", 8.0 / 7},
		{"30 GB: the cheapest card that holds it", testPrices, "H100-80GB", 30000, "L40S-48GB", 1.5},
		{"cheaper card only when priced", fakePrices{"A100-80GB": 2.6, "L4-24GB": 0.8}, "A100-80GB", 20000, "L4-24GB", 0.8},
		{"nothing fits", testPrices, "H100-80GB", 60000, "", 0},
		{"no price book: smallest fitting, a slice first", nil, "H100-80GB", 6000, "MIG 1g.10gb of H100-80GB", 0},
		{"card not in the book", testPrices, "H200-141GB", 12000, "MIG 1g.18gb of H200-141GB", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps := newPass(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), tt.prices, slog.New(slog.DiscardHandler))
			rec, ok := ps.recommend(t.Context(), opts, tt.card, tt.needMiB)
			if got := rec.option.name(); ok != (tt.want != "") || ok && got != tt.want {
				t.Fatalf("recommend = %q (found %v), want %q", got, ok, tt.want)
			}
			if ok && (rec.priced != (tt.wantPrice > 0) || rec.priced && abs(rec.proposed-tt.wantPrice) > 1e-9) {
				t.Errorf("priced %v at %g, want %g", rec.priced, rec.proposed, tt.wantPrice)
			}
		})
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
