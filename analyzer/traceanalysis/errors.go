package traceanalysis

import "errors"

// ErrNoRecords says the trace held no record to analyse.
var ErrNoRecords = errors.New("the trace has no records")
