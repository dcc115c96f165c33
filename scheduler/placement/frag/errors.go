package frag

import (
	"errors"
	"fmt"
)

// ErrNoFit is returned by Cluster.Place when the placement does not fit the
// node: too little CPU, memory or free GPU, or a GPU model the task excludes.
var ErrNoFit = errors.New("placement does not fit")

// ErrBadValue is wrapped by every ParseError: a trace field that is missing,
// malformed or out of range.
var ErrBadValue = errors.New("bad value")

// ParseError names the trace file, the line (1-based, the header is line 1),
// the column and the value that could not be read, and why.
type ParseError struct {
	File   string
	Line   int
	Column string
	Value  string
	Reason string
}

func (e *ParseError) Error() string {
	if e.Column == "" {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Reason)
	}
	return fmt.Sprintf("%s:%d: column %s: %q: %s", e.File, e.Line, e.Column, e.Value, e.Reason)
}

// Unwrap makes errors.Is(err, ErrBadValue) true for every ParseError.
func (e *ParseError) Unwrap() error { return ErrBadValue }
