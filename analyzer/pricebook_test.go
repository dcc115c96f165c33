package analyzer

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/analyzer/chargeback"
	"github.com/gpupool/gpupool/deploy"
)

func TestParsePriceBook(t *testing.T) {
	tests := []struct {
		name string
		csv  string
		rows int
		errs []string // each must appear in the error
	}{
		{"header and rows", "card,effective_from,effective_to,price_per_gpu_hour,currency,note\nH100-80GB,2026-01-01,,3.20,USD,list\nA100-40GB,2026-01-01T00:00:00Z,2026-06-01 00:00:00,1.5,EUR,\"a, b\"\n", 2, nil},
		{"no header, comments", "# prices\nH100-80GB,2026-01-01,,3,USD,\n", 1, nil},
		{"bad price", "H100-80GB,2026-01-01,,three,USD,\n", 0, []string{"line 1: price_per_gpu_hour"}},
		{"negative price", "card,effective_from,effective_to,price_per_gpu_hour,currency,note\nH100-80GB,2026-01-01,,-1,USD,\n", 0, []string{"line 2: price_per_gpu_hour"}},
		{"too many decimals", "H100-80GB,2026-01-01,,1.1234567,USD,\n", 0, []string{"line 1: price_per_gpu_hour"}},
		{"bad dates", "H100-80GB,yesterday,,1,USD,\nL40S-48GB,2026-02-01,2026-01-01,1,USD,\n", 0, []string{"line 1: effective_from", "line 2: effective_to 2026-01-01 is not after"}},
		{"currency", "H100-80GB,2026-01-01,,1,usd,\n", 0, []string{"line 1: currency"}},
		{"empty card", ",2026-01-01,,1,USD,\n", 0, []string{"line 1: card: empty"}},
		{"field count", "# c\nH100-80GB,2026-01-01,1,USD\n", 0, []string{"line 2: 4 fields, want 6"}},
		{"duplicate", "H100-80GB,2026-01-01,,1,USD,\nH100-80GB,2026-01-01 00:00:00,,2,USD,\n", 0, []string{"line 2: H100-80GB from 2026-01-01 00:00:00 is already priced on line 1"}},
		{"bad header", "card,from,to,price,currency,note\n", 0, []string{"line 1: header"}},
		{"quote", "H100-80GB,2026-01-01,,1,USD,\"open\n", 0, []string{"line 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows, err := ParsePriceBook(strings.NewReader(tt.csv))
			if len(tt.errs) == 0 {
				if err != nil || len(rows) != tt.rows {
					t.Fatalf("rows %d, err %v; want %d rows", len(rows), err, tt.rows)
				}
				return
			}
			if !errors.Is(err, ErrBadPriceBook) {
				t.Fatalf("err = %v, want ErrBadPriceBook", err)
			}
			for _, w := range tt.errs {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestLoadPriceBookIdempotent(t *testing.T) {
	s := newStore(t) // holds the example price book
	ctx := t.Context()
	rows, err := ParsePriceBook(strings.NewReader("H100-80GB,2025-01-01,,3.2,USD,example list price\nH100-80GB,2026-04-01,,2.9,USD,it's cheaper\n"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := LoadPriceBook(ctx, s, rows)
	if err != nil || res.Inserted != 1 || res.Unchanged != 1 {
		t.Fatalf("first load: %+v, %v; want 1 inserted (the new price), 1 unchanged", res, err)
	}
	res, err = LoadPriceBook(ctx, s, rows)
	if err != nil || res.Inserted != 0 || res.Unchanged != 2 {
		t.Fatalf("second load: %+v, %v; want nothing inserted", res, err)
	}
	q, err := s.Query(ctx, "SELECT count() AS n, countIf(note = 'it''s cheaper') AS quoted FROM price_book", nil)
	if err != nil {
		t.Fatal(err)
	}
	example, err := ParsePriceBook(bytes.NewReader(deploy.PriceBookExample))
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := q.Int(0, "n"); n != int64(len(example))+1 {
		t.Errorf("price_book has %d rows, want the example's %d and one more", n, len(example))
	}
	if n, _ := q.Int(0, "quoted"); n != 1 {
		t.Error("a note with a quote did not survive")
	}
	empty, err := PriceBookEmpty(ctx, s)
	if err != nil || empty {
		t.Errorf("PriceBookEmpty = %v, %v", empty, err)
	}
	book := chargeback.NewPriceBook(s)
	p, cur, err := book.PricePerGPUHour(ctx, "H100-80GB", time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC))
	if err != nil || p != 2.9 || cur != "USD" {
		t.Errorf("price after the load: %v %s %v", p, cur, err)
	}
}

// FuzzParsePriceBook: any input is either rejected with ErrBadPriceBook (or a read
// error) or gives rows that satisfy the checks LoadPriceBook relies on.
func FuzzParsePriceBook(f *testing.F) {
	f.Add(string(deploy.PriceBookExample))
	f.Add("H100-80GB,2026-01-01,,3.2,USD,\n")
	f.Add("card,effective_from,effective_to,price_per_gpu_hour,currency,note\nA,2026-01-01T00:00:00Z,2026-02-01 00:00:00,0,EUR,\"x,y\"\n")
	f.Fuzz(func(t *testing.T, in string) {
		rows, err := ParsePriceBook(strings.NewReader(in))
		if err != nil {
			return
		}
		for _, r := range rows {
			if r.Card == "" || r.From.IsZero() || !priceRe.MatchString(r.Price) || !currencyRe.MatchString(r.Currency) ||
				(!r.To.IsZero() && !r.To.After(r.From)) || r.Line < 1 {
				t.Fatalf("accepted a bad row %+v from %q", r, in)
			}
		}
	})
}
