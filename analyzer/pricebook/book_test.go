package pricebook

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestPricePerGPUHour checks the lookup the findings use to cost waste, including
// a price change in the middle of a job, versions and withdrawn rows.
func TestPricePerGPUHour(t *testing.T) {
	ctx := t.Context()
	s := openStore(t)
	if err := s.Exec(ctx, priceCases+`,
    ('H100-80GB', '2026-01-01 00:00:00', NULL, 4.00, 'USD', '2026-01-01 00:00:00', 0),
    ('H100-80GB', '2026-03-01 03:00:00', NULL, 6.00, 'USD', '2026-01-01 00:00:00', 0)`, nil); err != nil {
		t.Fatal(err)
	}
	book := New(s)
	tests := []struct {
		card     string
		at       time.Time
		price    float64
		currency string
		noPrice  bool
	}{
		{"H100-80GB", day(1, 2, 59), 4, "USD", false},
		{"H100-80GB", day(1, 3, 0), 6, "USD", false},
		{"H100-80GB", day(1, 3, 30), 6, "USD", false},
		{"next", day(4, 23, 59), 1, "USD", false},
		{"next", day(5), 2, "USD", false},
		{"gap", day(4), 0, "", true},
		{"misaligned", day(5, 10, 45), 1, "USD", false}, // the change at 10:30 applies from 11:00
		{"misaligned", day(5, 11, 0), 2, "USD", false},
		{"versions", day(9), 7.25, "USD", false},
		{"overlap", day(5), 2, "USD", false}, // the later-starting row wins
		{"euro", day(5), 0.9, "EUR", false},
		{"unknown-card", day(5), 0, "", true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s@%s", tt.card, tt.at.Format("02T15:04")), func(t *testing.T) {
			price, cur, err := book.PricePerGPUHour(ctx, tt.card, tt.at)
			if tt.noPrice {
				if !errors.Is(err, ErrNoPrice) {
					t.Fatalf("err = %v, want ErrNoPrice", err)
				}
				return
			}
			if err != nil || !near(price, tt.price) || cur != tt.currency {
				t.Fatalf("got %v %s %v, want %v %s", price, cur, err, tt.price, tt.currency)
			}
		})
	}
}

func TestSliceWeight(t *testing.T) {
	for _, tt := range []struct {
		card, profile string
		want          float64
	}{
		{"H100-80GB", "", 1},
		{"A100-40GB", "3g.20gb", 3.0 / 7},
		{"A100-80GB", "1g.10gb", 1.0 / 7},
		{"H100-80GB", "7g.80gb", 1},
		{"A100-40GB", "1c.3g.20gb", 3.0 / 7},
		{"A30-24GB", "2g.12gb", 0.5},
		{"A100-40GB", "weird", 1.0 / 7},
	} {
		if got := SliceWeight(tt.card, tt.profile); !near(got, tt.want) {
			t.Errorf("SliceWeight(%q, %q) = %v, want %v", tt.card, tt.profile, got, tt.want)
		}
	}
}
