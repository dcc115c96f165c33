package chargeback

import "errors"

// ErrBadPeriod means a period whose end is not after its start.
var ErrBadPeriod = errors.New("period end is not after its start")
