package traceanalysis

import "errors"

// ErrNoRecords says the trace held no record to analyse.
var ErrNoRecords = errors.New("the trace has no records")

// ErrNoTeam says a job that held GPUs has no team to bill.
var ErrNoTeam = errors.New("the trace has jobs without a team")
