package pricebook

import "errors"

var (
	// ErrBad means a price book file has rows that cannot be loaded; the error
	// joins a *LineError for each.
	ErrBad = errors.New("bad price book")
	// ErrNoPrice means the price book has no price for a card at a time: the card
	// has no row in effect then (a gap), or none at all.
	ErrNoPrice = errors.New("no price in the price book")
	// ErrBadPeriod means a period whose end is not after its start.
	ErrBadPeriod = errors.New("period end is not after its start")
)
