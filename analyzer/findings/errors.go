package findings

import "errors"

// ErrNoPrice means the price book has no price for a card at the time asked; the
// finding is kept without money (waste_cost 0, currency empty).
var ErrNoPrice = errors.New("no price for the card")

// ErrDetector means one or more detectors failed in a pass: the others' findings
// were still written, and the failed kinds' open findings were left as they were
// (neither updated nor resolved).
var ErrDetector = errors.New("detector failed")
