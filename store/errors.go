package store

import "errors"

// ErrClosed means the store was used after Close.
var ErrClosed = errors.New("store: closed")

// ErrBadBlock means a block handed to Insert is inconsistent (columns of different
// lengths, no columns).
var ErrBadBlock = errors.New("store: bad block")
