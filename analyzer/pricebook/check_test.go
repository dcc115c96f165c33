package pricebook

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// priceCases is a price book with one card per situation. The period checked is
// [2026-03-01, 2026-03-10).
const priceCases = `INSERT INTO price_book (card, effective_from, effective_to, price_per_gpu_hour, currency, updated_at, deleted) VALUES
    ('open',       '2026-01-01 00:00:00', NULL,                  1.00, 'USD', '2026-01-01 00:00:00', 0),
    ('gap',        '2026-01-01 00:00:00', '2026-03-03 00:00:00', 1.00, 'USD', '2026-01-01 00:00:00', 0),
    ('gap',        '2026-03-05 00:00:00', NULL,                  1.10, 'USD', '2026-01-01 00:00:00', 0),
    ('late',       '2026-03-04 00:00:00', NULL,                  1.00, 'USD', '2026-01-01 00:00:00', 0),
    ('overlap',    '2026-01-01 00:00:00', '2026-03-06 00:00:00', 1.00, 'USD', '2026-01-01 00:00:00', 0),
    ('overlap',    '2026-03-04 00:00:00', NULL,                  2.00, 'USD', '2026-01-01 00:00:00', 0),
    ('next',       '2026-01-01 00:00:00', NULL,                  1.00, 'USD', '2026-01-01 00:00:00', 0),
    ('next',       '2026-03-05 00:00:00', NULL,                  2.00, 'USD', '2026-01-01 00:00:00', 0),
    ('misaligned', '2026-01-01 00:00:00', '2026-03-05 10:30:00', 1.00, 'USD', '2026-01-01 00:00:00', 0),
    ('misaligned', '2026-03-05 10:30:00', NULL,                  2.00, 'USD', '2026-01-01 00:00:00', 0),
    ('ends',       '2026-01-01 00:00:00', '2026-03-08 00:00:00', 1.00, 'USD', '2026-01-01 00:00:00', 0),
    ('backwards',  '2026-01-01 00:00:00', NULL,                  1.00, 'USD', '2026-01-01 00:00:00', 0),
    ('backwards',  '2026-03-05 00:00:00', '2026-03-04 00:00:00', 2.00, 'USD', '2026-01-01 00:00:00', 0),
    ('zero',       '2026-01-01 00:00:00', NULL,                  0.00, 'USD', '2026-01-01 00:00:00', 0),
    ('versions',   '2026-01-01 00:00:00', NULL,                  5.00, 'USD', '2026-01-01 00:00:00', 0),
    ('versions',   '2026-01-01 00:00:00', '2026-03-02 00:00:00', 7.00, 'USD', '2026-02-01 00:00:00', 0),
    ('versions',   '2026-01-01 00:00:00', NULL,                  7.25, 'USD', '2026-02-02 00:00:00', 0),
    ('versions',   '2026-03-05 00:00:00', NULL,                  9.00, 'USD', '2026-02-01 00:00:00', 0),
    ('versions',   '2026-03-05 00:00:00', NULL,                  9.00, 'USD', '2026-02-03 00:00:00', 1),
    ('euro',       '2026-01-01 00:00:00', NULL,                  0.90, 'EUR', '2026-01-01 00:00:00', 0)`

func day(d int, hm ...int) time.Time {
	t := time.Date(2026, 3, d, 0, 0, 0, 0, time.UTC)
	if len(hm) == 2 {
		t = t.Add(time.Duration(hm[0])*time.Hour + time.Duration(hm[1])*time.Minute)
	}
	return t
}

// TestCheck checks each price book situation: what is reported, with
// which card and dates.
func TestCheck(t *testing.T) {
	ctx := t.Context()
	s := openStore(t)
	if err := s.Exec(ctx, priceCases, nil); err != nil {
		t.Fatal(err)
	}
	rows, err := loadPriceRows(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	timeline, err := loadTimeline(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	from, to := day(1), day(10)
	type problem struct {
		kind     ProblemKind
		from, to time.Time
	}
	tests := []struct {
		name  string
		cards []string
		want  []problem
	}{
		{"open-ended row covers everything", []string{"open"}, nil},
		{"gap between two rows", []string{"gap"}, []problem{{ProblemGap, day(3), day(5)}}},
		{"no price at all", []string{"unknown-card"}, []problem{{ProblemGap, day(1), day(10)}}},
		{"first price starts late", []string{"late"}, []problem{{ProblemGap, day(1), day(4)}}},
		{"explicit end past the next start", []string{"overlap"}, []problem{{ProblemOverlap, day(4), day(6)}}},
		{"open-ended row ends at the next", []string{"next"}, nil},
		{"change off the hour", []string{"misaligned"}, []problem{
			{ProblemMisaligned, day(5, 10, 30), day(5, 11, 0)}, {ProblemMisaligned, day(5, 10, 30), day(5, 11, 0)}}},
		{"price ends inside the period", []string{"ends"}, []problem{{ProblemGap, day(8), day(10)}}},
		{"row ending before it starts", []string{"backwards"}, []problem{
			{ProblemBadRange, day(5), day(4)}, {ProblemGap, day(5), day(10)}}},
		{"zero price", []string{"zero"}, []problem{{ProblemZeroPrice, day(1), day(10)}}},
		{"latest version wins, deleted rows vanish", []string{"versions"}, nil},
		{"two currencies", []string{"open", "euro"}, []problem{{ProblemCurrency, day(1), day(10)}, {ProblemCurrency, day(1), day(10)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := checkPrices(tt.cards, rows, timeline, from, to)
			var g, w []string
			for _, p := range got {
				g = append(g, fmt.Sprintf("%s %s–%s", p.Kind, fmtTime(p.From), fmtTime(p.To)))
				if !slicesContain(tt.cards, p.Card) || p.Detail == "" {
					t.Errorf("problem %v names card %q (want one of %v) or has no detail", p, p.Card, tt.cards)
				}
			}
			for _, p := range tt.want {
				w = append(w, fmt.Sprintf("%s %s–%s", p.kind, fmtTime(p.from), fmtTime(p.to)))
			}
			if strings.Join(g, "\n") != strings.Join(w, "\n") {
				t.Errorf("got problems:\n%s\nwant:\n%s\n(%v)", strings.Join(g, "\n"), strings.Join(w, "\n"), got)
			}
		})
	}
}

func slicesContain(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
