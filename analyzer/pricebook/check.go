package pricebook

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gpupool/gpupool/store"
)

// ProblemKind names what is wrong with the price book.
type ProblemKind string

// The problems Check reports, and what the chargeback does about each.
const (
	// ProblemGap: hours of the period for which a card in use has no price. Those
	// GPU-hours are unpriced: their cost is NULL (nil in Go), never 0.
	ProblemGap ProblemKind = "gap"
	// ProblemOverlap: two rows of a card both claim some hours (the first has an
	// effective_to after the second's effective_from). The later-starting row is
	// applied; fix the first row's effective_to.
	ProblemOverlap ProblemKind = "overlap"
	// ProblemCurrency: the period's prices use more than one currency. Costs of
	// groups that mix currencies are NULL.
	ProblemCurrency ProblemKind = "currency"
	// ProblemMisaligned: an effective_from or effective_to not on a whole hour.
	// Prices apply per hour, so the change takes effect at the first whole hour at
	// or after it.
	ProblemMisaligned ProblemKind = "misaligned"
	// ProblemBadRange: a row whose effective_to is not after its effective_from.
	// It prices nothing, but still ends the row before it.
	ProblemBadRange ProblemKind = "bad_range"
	// ProblemZeroPrice: a price of zero or less is in effect. It is applied as
	// written; it is reported because it is almost always a typing mistake.
	ProblemZeroPrice ProblemKind = "zero_price"
)

// Problem is one thing wrong with the price book for a card in a period.
type Problem struct {
	Kind ProblemKind `json:"kind"`
	Card string      `json:"card"`
	// From and To bound the time affected, UTC, To exclusive.
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// Detail says what was found and what to do, in words.
	Detail string `json:"detail"`
}

func (p Problem) String() string {
	return fmt.Sprintf("%s: card %s, %s to %s: %s", p.Kind, p.Card,
		p.From.UTC().Format(time.DateTime), p.To.UTC().Format(time.DateTime), p.Detail)
}

// priceRow is one row of price_book_current.
type priceRow struct {
	From     time.Time
	To       *time.Time
	Price    float64
	Currency string
}

// Check reports what is wrong with the price book for the cards that
// reported samples in [from, to): gaps (which card, which hours have no price),
// overlapping rows, mixed currencies, changes off the hour, rows that end before
// they start and zero prices. No problems means every GPU-hour of those cards in
// the period has exactly one price in one currency.
func Check(ctx context.Context, q store.Querier, from, to time.Time) ([]Problem, error) {
	p, err := periodParams(from, to)
	if err != nil {
		return nil, fmt.Errorf("price book: check: %w", err)
	}
	res, err := q.Query(ctx, `SELECT DISTINCT toString(g.card) AS card FROM gpu_hour AS g
WHERE g.hour >= toStartOfHour({from:DateTime64(3, 'UTC')}) AND g.hour < {to:DateTime64(3, 'UTC')} AND g.card != ''
ORDER BY card`, p)
	if err != nil {
		return nil, fmt.Errorf("price book: check: cards in use: %w", err)
	}
	var cards []string
	inUse := store.Read(res, "cards in use")
	for inUse.Next() {
		cards = append(cards, inUse.Str("card"))
	}
	if err := inUse.Err(); err != nil {
		return nil, fmt.Errorf("price book: check: cards in use: %w", err)
	}
	rows, err := loadPriceRows(ctx, q)
	if err != nil {
		return nil, err
	}
	timeline, err := loadTimeline(ctx, q)
	if err != nil {
		return nil, err
	}
	return checkPrices(cards, rows, timeline, from.UTC(), to.UTC()), nil
}

func loadPriceRows(ctx context.Context, q store.Querier) (map[string][]priceRow, error) {
	res, err := q.Query(ctx, `SELECT toString(card) AS card, effective_from, effective_to,
       toFloat64(price_per_gpu_hour) AS price, toString(currency) AS currency
FROM price_book_current ORDER BY card, effective_from`, nil)
	if err != nil {
		return nil, fmt.Errorf("price book: read price_book_current: %w", err)
	}
	out := map[string][]priceRow{}
	rows := store.Read(res, "price_book_current")
	for rows.Next() {
		// A NULL price is NaN, as before the row reader (toFloat64 of a price is
		// never NULL); a NULL effective_to is an open end.
		r := priceRow{To: rows.NullTime("effective_to"), Price: rows.FloatOr("price", math.NaN()), Currency: rows.Str("currency")}
		from, card := rows.NullTime("effective_from"), rows.Str("card")
		if rows.Err() != nil {
			break
		}
		if from == nil {
			return nil, fmt.Errorf("price book: read price_book_current: card %q: effective_from is NULL", card)
		}
		r.From = *from
		out[card] = append(out[card], r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("price book: read price_book_current: %w", err)
	}
	return out, nil
}

// checkPrices is Check's logic over loaded rows; timeline is the
// price_timeline view the chargeback prices from, so gaps are exactly the hours
// the chargeback leaves unpriced.
func checkPrices(cards []string, rows map[string][]priceRow, timeline map[string][]period, from, to time.Time) []Problem {
	var out []Problem
	add := func(kind ProblemKind, card string, f, t time.Time, detail string, args ...any) {
		out = append(out, Problem{Kind: kind, Card: card, From: f, To: t, Detail: fmt.Sprintf(detail, args...)})
	}
	end := func(r priceRow) time.Time {
		if r.To == nil {
			return time.Unix(1<<32-1, 0).UTC()
		}
		return *r.To
	}
	intersects := func(f, t time.Time) bool { return f.Before(to) && t.After(from) }
	currencies := map[string][]string{}
	for _, card := range cards {
		rs := rows[card]
		for i, r := range rs {
			if r.To != nil && !r.To.After(r.From) {
				add(ProblemBadRange, card, r.From, *r.To, "the row from %s ends at %s, not after it starts: it prices nothing; correct or delete it",
					fmtTime(r.From), fmtTime(*r.To))
				continue
			}
			if !intersects(r.From, end(r)) {
				continue
			}
			for _, t := range []*time.Time{&r.From, r.To} {
				if t != nil && !t.Equal(t.Truncate(time.Hour)) {
					add(ProblemMisaligned, card, *t, t.Truncate(time.Hour).Add(time.Hour),
						"the row from %s changes the price at %s, not on a whole hour: it takes effect at %s",
						fmtTime(r.From), fmtTime(*t), fmtTime(t.Truncate(time.Hour).Add(time.Hour)))
				}
			}
			for _, n := range rs[i+1:] {
				if !n.From.Before(end(r)) {
					break
				}
				if n.To != nil && !n.To.After(n.From) {
					continue
				}
				f, t := maxTime(n.From, from), minTime(end(r), end(n), to)
				if r.To != nil && f.Before(t) {
					add(ProblemOverlap, card, f, t,
						"the row from %s (%g %s, to %s) and the row from %s (%g %s) both cover this time: the later-starting row is applied; end the first row at %s",
						fmtTime(r.From), r.Price, r.Currency, fmtTime(*r.To), fmtTime(n.From), n.Price, n.Currency, fmtTime(n.From))
				}
			}
		}
		// Walk the hours as the chargeback prices them.
		var gapFrom, zeroFrom time.Time
		var zp period
		inGap, inZero := false, false
		for h := from.Truncate(time.Hour); h.Before(to); h = h.Add(time.Hour) {
			p, ok := priceAt(timeline[card], h)
			if !ok && !inGap {
				gapFrom, inGap = h, true
			}
			if ok && inGap {
				add(ProblemGap, card, gapFrom, h, "no price for %s: its GPU-hours are unpriced (cost NULL); add a price_book row", card)
				inGap = false
			}
			zero := ok && p.Price <= 0
			if zero && !inZero {
				zeroFrom, zp, inZero = h, p, true
			}
			if !zero && inZero {
				add(ProblemZeroPrice, card, zeroFrom, h, "price %g %s in effect: its GPU-hours cost nothing; check the row from %s", zp.Price, zp.Currency, fmtTime(zp.From))
				inZero = false
			}
			if ok && !slices.Contains(currencies[card], p.Currency) {
				currencies[card] = append(currencies[card], p.Currency)
			}
		}
		if inGap {
			add(ProblemGap, card, gapFrom, to, "no price for %s: its GPU-hours are unpriced (cost NULL); add a price_book row", card)
		}
		if inZero {
			add(ProblemZeroPrice, card, zeroFrom, to, "price %g %s in effect: its GPU-hours cost nothing; check the row from %s", zp.Price, zp.Currency, fmtTime(zp.From))
		}
	}
	var all []string
	for _, cs := range currencies {
		for _, c := range cs {
			if !slices.Contains(all, c) {
				all = append(all, c)
			}
		}
	}
	if len(all) > 1 {
		sort.Strings(all)
		for _, card := range cards {
			if cs := currencies[card]; len(cs) > 0 {
				add(ProblemCurrency, card, from, to, "priced in %s while the period's prices use %s: costs summed across currencies are NULL",
					strings.Join(cs, ", "), strings.Join(all, ", "))
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Card != out[j].Card {
			return out[i].Card < out[j].Card
		}
		if !out[i].From.Equal(out[j].From) {
			return out[i].From.Before(out[j].From)
		}
		return out[i].Kind < out[j].Kind
	})
	return out
}

func fmtTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05") }

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(ts ...time.Time) time.Time {
	m := ts[0]
	for _, t := range ts[1:] {
		if t.Before(m) {
			m = t
		}
	}
	return m
}

// WriteProblems prints a price book check's problems one a line on w, or that there
// are none; it returns an error counting them when there are any (a CLI's exit status).
func WriteProblems(w io.Writer, problems []Problem, from, to time.Time) error {
	period := fmt.Sprintf("%s to %s", from.Format(time.RFC3339), to.Format(time.RFC3339))
	if len(problems) == 0 {
		_, err := fmt.Fprintf(w, "price book: no problems for the cards used from %s\n", period)
		return err
	}
	for _, pr := range problems {
		fmt.Fprintln(w, pr.String())
	}
	return fmt.Errorf("price book: %d problem(s) for the cards used from %s (fix them with gpupool pricebook load, see docs/finance.md)", len(problems), period)
}

// periodParams checks a period and returns it as the {from} and {to} parameters
// (DateTime64(3)).
func periodParams(from, to time.Time) (store.Params, error) {
	if !to.After(from) {
		return nil, fmt.Errorf("%w: %s to %s", ErrBadPeriod, from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))
	}
	ms := func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000") }
	return store.Params{"from": ms(from), "to": ms(to)}, nil
}
