package findings

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Prices is the price book: the price of one GPU-hour of a card type at a time, and
// its currency. pricebook.Book implements it over the price_timeline view; an
// error means the card has no price then (the finding is kept, without money).
type Prices interface {
	PricePerGPUHour(ctx context.Context, card string, at time.Time) (float64, string, error)
}

// price is one answer of the price book.
type price struct {
	perHour  float64
	currency string
	err      error
}

// pass is one analyzer pass: its time and what it has asked the price book, so a
// card is priced once per pass however many findings it has.
type pass struct {
	now time.Time
	// running are the jobs holding GPUs at now, read once for every detector.
	running []runningJob
	prices  Prices
	log     *slog.Logger
	// mu guards cache: detectors run concurrently.
	mu    sync.Mutex
	cache map[string]price
	// openHung are the jobs with an open hung finding: they need no baseline.
	openHung map[string]bool
	// stalled are the jobs the analyzer remembers as stalled (signalStall): like
	// an open hung finding, they need no baseline.
	stalled map[string]bool
	// holders are the running jobs holding each GPU (more than one: shared).
	holders map[string][]string
	// hs are the hint detectors' job statistics, read once (hintstats.go).
	hs passStats
}

func newPass(now time.Time, p Prices, log *slog.Logger) *pass {
	return &pass{now: now, prices: p, log: log, cache: map[string]price{}, openHung: map[string]bool{}, stalled: map[string]bool{},
		holders: map[string][]string{}}
}

// price returns the price of card at the pass's time. A missing price book, card or
// period is logged once per pass and returned as an error.
func (ps *pass) price(ctx context.Context, card string) (float64, string, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if p, ok := ps.cache[card]; ok {
		return p.perHour, p.currency, p.err
	}
	var p price
	switch {
	case ps.prices == nil:
		p.err = ErrNoPrice
	case card == "":
		p.err = fmt.Errorf("%w: the GPUs report no card type", ErrNoPrice)
	default:
		p.perHour, p.currency, p.err = ps.prices.PricePerGPUHour(ctx, card, ps.now)
		if p.err == nil && !(p.perHour >= 0) {
			p.err = fmt.Errorf("%w: price book gives %g per GPU-hour for %s", ErrNoPrice, p.perHour, card)
		}
		if p.err != nil {
			ps.log.Warn("no price for card; its findings carry no cost", "card", card, "at", ps.now, "err", p.err)
		}
	}
	ps.cache[card] = p
	return p.perHour, p.currency, p.err
}

// optionPrice is the price of one GPU-hour of a card option: the card's, or its
// slices' share for a MIG profile (how chargeback bills a slice).
func (ps *pass) optionPrice(ctx context.Context, o CardOption) (float64, string, error) {
	p, cur, err := ps.price(ctx, o.Card)
	if err != nil || o.Slices == 0 {
		return p, cur, err
	}
	return p * float64(o.Slices) / 7, cur, nil
}

// recommendation is the card option wrong_card proposes for a job.
type recommendation struct {
	option CardOption
	// current and proposed are prices per GPU-hour; priced is false when the price
	// book could not price both (the option is then the smallest that fits).
	current, proposed float64
	currency          string
	priced            bool
}

// name is how the option reads: "MIG 1g.10gb of H100-80GB" or "L40S-48GB".
func (o CardOption) name() string {
	if o.MIGProfile != "" {
		return "MIG " + o.MIGProfile + " of " + o.Card
	}
	return o.Card
}

// recommend picks the cheapest option that holds needMiB and costs less than the
// job's card: a MIG profile of the job's own card type, or another card type. With
// no prices it picks the smallest option that fits, preferring a MIG profile (no
// move to another node type).
func (ps *pass) recommend(ctx context.Context, options []CardOption, card string, needMiB float64) (recommendation, bool) {
	var best recommendation
	found := false
	cur, currency, curErr := ps.price(ctx, card)
	for _, o := range options {
		if float64(o.MemoryMiB) < needMiB || (o.Slices > 0) != (o.Card == card) {
			continue
		}
		cand := recommendation{option: o, current: cur, currency: currency}
		if curErr == nil {
			p, c, err := ps.optionPrice(ctx, o)
			if err == nil && c == currency {
				if p >= cur {
					continue // no saving
				}
				cand.proposed, cand.priced = p, true
			}
		}
		if better(cand, best, found) {
			best, found = cand, true
		}
	}
	return best, found
}

// better orders candidates: priced before unpriced, then cheaper, then MIG before a
// card swap, then less memory.
func better(a, b recommendation, haveB bool) bool {
	switch {
	case !haveB:
		return true
	case a.priced != b.priced:
		return a.priced
	case a.priced && a.proposed != b.proposed:
		return a.proposed < b.proposed
	case (a.option.Slices > 0) != (b.option.Slices > 0):
		return a.option.Slices > 0
	}
	return a.option.MemoryMiB < b.option.MemoryMiB
}
