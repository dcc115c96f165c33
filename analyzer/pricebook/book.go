package pricebook

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/gpupool/gpupool/store"
)

// period is one stretch of a card's price timeline: [From, To) in the
// price_timeline view's terms (the later-starting row wins where rows overlap; an
// open-ended row runs until the card's next row starts).
type period struct {
	From, To time.Time
	Price    float64
	Currency string
}

// Book looks up prices the way the chargeback applies them: the price of a card
// at an instant is the price_timeline row in effect at the start of that hour. It
// reads the price book once, on first use; make one per analyzer pass to see
// finance's latest edits. Safe for concurrent use.
type Book struct {
	q      store.Querier
	once   sync.Once
	err    error
	byCard map[string][]period
}

// New returns a price book that reads q's price_timeline view.
func New(q store.Querier) *Book { return &Book{q: q} }

// PricePerGPUHour returns the price of one whole GPU of card for one hour at at,
// and its currency. A MIG instance costs SliceWeight of it. A card with no price
// then returns an error wrapping ErrNoPrice, never a zero price.
func (b *Book) PricePerGPUHour(ctx context.Context, card string, at time.Time) (float64, string, error) {
	b.once.Do(func() { b.byCard, b.err = loadTimeline(ctx, b.q) })
	if b.err != nil {
		return 0, "", b.err
	}
	p, ok := priceAt(b.byCard[card], at)
	if !ok {
		return 0, "", fmt.Errorf("price lookup: %w for card %q at %s (add one to price_book, see docs/finance.md)",
			ErrNoPrice, card, at.UTC().Truncate(time.Hour).Format(time.DateTime))
	}
	return p.Price, p.Currency, nil
}

// priceAt applies the hourly rule to a card's sorted timeline: the last period
// starting at or before the hour's start, if the hour starts before its end.
func priceAt(periods []period, at time.Time) (period, bool) {
	h := at.UTC().Truncate(time.Hour)
	i := sort.Search(len(periods), func(i int) bool { return periods[i].From.After(h) }) - 1
	if i < 0 || !h.Before(periods[i].To) {
		return period{}, false
	}
	return periods[i], true
}

func loadTimeline(ctx context.Context, q store.Querier) (map[string][]period, error) {
	res, err := q.Query(ctx, `SELECT toString(card) AS card, valid_from, valid_to,
       toFloat64(price_per_gpu_hour) AS price, toString(currency) AS currency
FROM price_timeline ORDER BY card, valid_from`, nil)
	if err != nil {
		return nil, fmt.Errorf("price book: read price_timeline: %w", err)
	}
	out := map[string][]period{}
	rows := store.Read(res, "price_timeline")
	for rows.Next() {
		from, to := rows.NullTime("valid_from"), rows.NullTime("valid_to")
		// A NULL price is NaN, as before the row reader (toFloat64 of a price is never NULL).
		p := period{Price: rows.FloatOr("price", math.NaN()), Currency: rows.Str("currency")}
		card := rows.Str("card")
		if rows.Err() != nil {
			break
		}
		if from == nil || to == nil {
			return nil, fmt.Errorf("price book: read price_timeline: card %q: validity is NULL", card)
		}
		p.From, p.To = *from, *to
		out[card] = append(out[card], p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("price book: read price_timeline: %w", err)
	}
	return out, nil
}

var migSlicesRe = regexp.MustCompile(`(\d+)g\.`)

// SliceWeight returns how many GPUs of card one unit with the given MIG profile
// counts as: 1 for a whole GPU (empty profile), else the profile's compute slices
// over the card's (7; 4 on an A30), e.g. 3/7 for "3g.20gb". It is the weight the
// chargeback gives GPU-hours; a profile it cannot read counts as one slice.
func SliceWeight(card, migProfile string) float64 {
	if migProfile == "" {
		return 1
	}
	m := migSlicesRe.FindStringSubmatch(migProfile)
	n := 0
	if m != nil {
		n, _ = strconv.Atoi(m[1])
	}
	if n < 1 || n > 255 {
		n = 1
	}
	total := 7.
	if len(card) >= 3 && card[:3] == "A30" {
		total = 4
	}
	return float64(n) / total
}
