package chdb

import "errors"

// ErrLibraryMissing means libchdb.so could not be found or loaded; the embedded store
// cannot start without it ("make deps" fetches it).
var ErrLibraryMissing = errors.New("embedded store: libchdb.so not available")

// QueryError is an error reported by the chDB engine for one statement.
type QueryError struct {
	// Message is the engine's error text (it starts with "Code: N.").
	Message string
}

func (e *QueryError) Error() string { return "chdb: " + e.Message }

// ErrPathInUse means another data path is already open in this process. The engine
// serves one data path per process; isolate users by database instead.
var ErrPathInUse = errors.New("embedded store: another data path is open in this process")

// ErrStoreHeld means another process holds the data path: the engine locks it
// (its status file) so that one process at a time opens it. HeldError says which.
var ErrStoreHeld = errors.New("embedded store: data path held by another process")
