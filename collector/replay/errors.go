package replay

import "errors"

// ErrRecorderClosed is returned by a Recorder's methods after Close.
var ErrRecorderClosed = errors.New("replay: recorder is closed")
