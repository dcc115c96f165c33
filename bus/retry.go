package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// Backoff is gpupool's one retry policy for publishing: the wait after the first
// failed attempt is Initial, and it doubles after each further failure up to Max.
// Retry keeps trying until the attempt succeeds, fails permanently or ctx ends:
// it has no bound of its own, so a caller that must not block for long (the
// scheduler's loop) bounds ctx.
type Backoff struct {
	// Initial is the wait after the first failure.
	Initial time.Duration `yaml:"initial"`
	// Max caps the wait between two attempts.
	Max time.Duration `yaml:"max"`
}

// DefaultBackoff waits 50 ms after the first failure, doubling up to 10 s.
func DefaultBackoff() Backoff { return Backoff{Initial: 50 * time.Millisecond, Max: 10 * time.Second} }

// Validate checks the policy.
func (b Backoff) Validate() error {
	switch {
	case b.Initial <= 0:
		return schemas.Fieldf("initial", "%s must be positive", b.Initial)
	case b.Max < b.Initial:
		return schemas.Fieldf("max", "%s is shorter than initial (%s)", b.Max, b.Initial)
	}
	return nil
}

// Delay is the wait after the failures-th consecutive failure (1 for the first).
func (b Backoff) Delay(failures int) time.Duration {
	d := b.Initial
	for i := 1; i < failures && d < b.Max; i++ {
		d *= 2
	}
	return min(d, b.Max)
}

// Retry calls attempt until it returns nil, returns an error marked Permanent
// (returned unwrapped, at once) or ctx ends (the error then wraps ctx.Err() and
// names the last failure). onFail, when not nil, is told of each failure before
// the wait: the attempt's number (from 1), the wait and the error.
func (b Backoff) Retry(ctx context.Context, attempt func(context.Context) error, onFail func(n int, wait time.Duration, err error)) error {
	for n := 1; ; n++ {
		err := attempt(ctx)
		if err == nil {
			return nil
		}
		var perm *permanentError
		if errors.As(err, &perm) {
			return perm.err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w (last attempt: %v)", ctx.Err(), err)
		}
		wait := b.Delay(n)
		if onFail != nil {
			onFail(n, wait, err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (last attempt: %v)", ctx.Err(), err)
		case <-t.C:
		}
	}
}

// Permanent marks err as one that trying again cannot fix (a full disk, a message
// that cannot be encoded): Backoff.Retry returns it at once.
func Permanent(err error) error { return &permanentError{err: err} }

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }
