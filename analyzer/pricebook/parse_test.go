package pricebook

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpupool/gpupool/deploy"
)

func TestParse(t *testing.T) {
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
			rows, err := Parse(strings.NewReader(tt.csv))
			if len(tt.errs) == 0 {
				if err != nil || len(rows) != tt.rows {
					t.Fatalf("rows %d, err %v; want %d rows", len(rows), err, tt.rows)
				}
				return
			}
			if !errors.Is(err, ErrBad) {
				t.Fatalf("err = %v, want ErrBad", err)
			}
			for _, w := range tt.errs {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestLineErrors: each bad line is a *LineError naming its line and the column
// at fault, found with errors.As through the file's error.
func TestLineErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prices.csv")
	csv := "card,effective_from,effective_to,price_per_gpu_hour,currency,note\n" +
		"H100-80GB,2026-01-01,,abc,USD,\n" + // price
		"L40S-48GB,2026-02-01,2026-01-01,1,USD,\n" + // to before from
		"A100-40GB,2026-01-01,,1\n" // field count
	if err := os.WriteFile(path, []byte(csv), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Read(path)
	if err == nil || !strings.HasPrefix(err.Error(), "price book "+path+": bad price book:\nline 2: price_per_gpu_hour: ") {
		t.Fatalf("err = %v, want one naming the file, then line 2's price", err)
	}
	var got []string
	for _, le := range lineErrors(err) {
		got = append(got, fmt.Sprintf("%s@%d", le.Column, le.Line))
	}
	want := "price_per_gpu_hour@2, effective_to@3, @4"
	if strings.Join(got, ", ") != want {
		t.Errorf("line errors %q, want %q", strings.Join(got, ", "), want)
	}
}

// lineErrors are the *LineErrors in err's tree, in order.
func lineErrors(err error) []*LineError {
	if le, ok := err.(*LineError); ok {
		return []*LineError{le}
	}
	var out []*LineError
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			out = append(out, lineErrors(e)...)
		}
	case interface{ Unwrap() error }:
		out = lineErrors(u.Unwrap())
	}
	return out
}

func TestReadExample(t *testing.T) {
	rows, err := Read("")
	if err != nil || len(rows) == 0 {
		t.Fatalf("the built-in example: %d rows, %v", len(rows), err)
	}
	if _, err := Read(filepath.Join(t.TempDir(), "missing.csv")); err == nil || !strings.Contains(err.Error(), "missing.csv") {
		t.Errorf("a missing file: %v, want an error naming it", err)
	}
}

// FuzzParse: any input is either rejected with ErrBad (or a read error) or gives
// rows that satisfy the checks Load relies on.
func FuzzParse(f *testing.F) {
	f.Add(string(deploy.PriceBookExample))
	f.Add("H100-80GB,2026-01-01,,3.2,USD,\n")
	f.Add("card,effective_from,effective_to,price_per_gpu_hour,currency,note\nA,2026-01-01T00:00:00Z,2026-02-01 00:00:00,0,EUR,\"x,y\"\n")
	f.Fuzz(func(t *testing.T, in string) {
		rows, err := Parse(strings.NewReader(in))
		if err != nil {
			var le *LineError
			if errors.Is(err, ErrBad) && !errors.As(err, &le) {
				t.Fatalf("ErrBad with no line error from %q: %v", in, err)
			}
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
