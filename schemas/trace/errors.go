package trace

import (
	"errors"
	"strconv"
)

// ErrInvalidRecord means a record breaks the trace format: a line the Reader rejects
// (see LineError, which wraps it) or a record the Writer refuses to write because a
// Reader would reject it.
var ErrInvalidRecord = errors.New("invalid trace record")

// ErrClosed is returned by a Writer's methods after Close.
var ErrClosed = errors.New("trace: writer is closed")

// LineError is a trace line the Reader rejected: its 1-based line number and why.
type LineError struct {
	Line   int
	Reason string
}

func (e *LineError) Error() string {
	return "trace line " + strconv.Itoa(e.Line) + ": " + e.Reason
}

// Unwrap makes errors.Is(err, ErrInvalidRecord) true for every LineError.
func (e *LineError) Unwrap() error { return ErrInvalidRecord }
