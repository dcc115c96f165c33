package pricebook

import (
	"strings"
	"testing"
	"time"
)

// TestReadersReportAMissingColumn: the price book's readers fail with an error
// naming the missing column and the query, rather than reading zeros.
func TestReadersReportAMissingColumn(t *testing.T) {
	ctx, at := t.Context(), time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	_, errEmpty := Empty(ctx, shortStore{})
	_, errLoad := Load(ctx, shortStore{}, nil)
	_, _, errBook := New(shortStore{}).PricePerGPUHour(ctx, "H100-80GB", at)
	_, errCheck := Check(ctx, shortStore{}, at.Add(-time.Hour), at)
	for name, c := range map[string]struct {
		err        error
		column, in string
	}{
		"Empty":           {errEmpty, `"n"`, "price_book_current count"},
		"Load":            {errLoad, `"card"`, "price_book_current"},
		"PricePerGPUHour": {errBook, `"valid_from"`, "price_timeline"},
		"Check":           {errCheck, `"card"`, "cards in use"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.column) || !strings.Contains(c.err.Error(), c.in) {
			t.Errorf("%s: error %v, want one naming column %s and %q", name, c.err, c.column, c.in)
		}
	}
}
