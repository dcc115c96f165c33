package bus

import "errors"

// ErrUnreachable is returned by Open when an external NATS does not answer within
// ClientConfig.ConnectTimeout; the error wrapping it names the URL and what to
// check.
var ErrUnreachable = errors.New("NATS unreachable")
