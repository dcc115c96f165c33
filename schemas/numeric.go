package schemas

import (
	"fmt"
	"math"
	"time"
)

// MaxSeconds is the largest count of seconds a time.Duration holds (about 292
// years): a larger one wraps around when multiplied by time.Second, and a
// limit of 2⁶³−1 seconds would pass every maximum as a negative duration.
const MaxSeconds = math.MaxInt64 / int64(time.Second)

// Seconds converts v, a count of seconds in field, to a duration. A negative
// count, or one past MaxSeconds, is an error naming the field (wrapping
// ErrOutOfRange); compare the result with a limit only after this check.
func Seconds(field string, v int64) (time.Duration, error) {
	if v < 0 {
		return 0, fmt.Errorf("%w: %s: %d is negative", ErrOutOfRange, field, v)
	}
	if v > MaxSeconds {
		return 0, fmt.Errorf("%w: %s: %d seconds is more than a duration holds (%d, about 292 years)", ErrOutOfRange, field, v, MaxSeconds)
	}
	return time.Duration(v) * time.Second, nil
}

// SecondsFloat is Seconds for a fractional count: NaN, infinities, negatives
// and values past MaxSeconds are errors (a float64 past the int64 range
// converts to an arbitrary duration, often a negative one).
func SecondsFloat(field string, v float64) (time.Duration, error) {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return 0, fmt.Errorf("%w: %s: %v is not a number of seconds", ErrOutOfRange, field, v)
	case v < 0:
		return 0, fmt.Errorf("%w: %s: %v is negative", ErrOutOfRange, field, v)
	case v >= float64(MaxSeconds):
		return 0, fmt.Errorf("%w: %s: %v seconds is more than a duration holds (%d, about 292 years)", ErrOutOfRange, field, v, MaxSeconds)
	}
	return time.Duration(v * float64(time.Second)), nil
}

// SecondsToMillis converts a Unix time in seconds to milliseconds, refusing a
// negative one or one whose milliseconds overflow int64.
func SecondsToMillis(field string, v int64) (int64, error) {
	if v < 0 {
		return 0, fmt.Errorf("%w: %s: %d is negative", ErrOutOfRange, field, v)
	}
	if v > math.MaxInt64/1000 {
		return 0, fmt.Errorf("%w: %s: %d seconds overflows a time in milliseconds", ErrOutOfRange, field, v)
	}
	return v * 1000, nil
}
