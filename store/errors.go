package store

import "errors"

// ErrClosed means the store was used after Close.
var ErrClosed = errors.New("store: closed")

// ErrBadBlock means a block handed to Insert is inconsistent (columns of different
// lengths, no columns).
var ErrBadBlock = errors.New("store: bad block")

// ErrRefused means the read-only SQL path refused a statement: not a read, or
// one that would touch the local file system, the network or processes (see
// RefusedError for what and why).
var ErrRefused = errors.New("store: statement refused on the read-only path")

// ErrNarrowing means Insert refused a block column whose type does not fit the
// table's column: some of its values would be cut, rounded or lose their NULL
// on the way in (see CheckInsertType).
var ErrNarrowing = errors.New("store: the table's column cannot hold every value of the block's type")
