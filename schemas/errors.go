package schemas

import "errors"

// ErrMalformed means bytes could not be decoded as the expected message: not
// protobuf, columns of different lengths, dictionary references out of range.
var ErrMalformed = errors.New("malformed message")

// ErrSchemaVersion means the message declares a schema version this reader cannot
// read (a breaking change, or a missing version).
var ErrSchemaVersion = errors.New("unsupported schema version")

// ErrInvalidValue means a message decoded but holds values no GPU can report:
// a ratio outside 0..1, memory used above memory total, a time far from now.
var ErrInvalidValue = errors.New("invalid value")

// ErrInvalidIdentifier means a name, key or text field is too long, empty where
// it is required, or holds characters outside its set (see ident.go).
var ErrInvalidIdentifier = errors.New("invalid identifier")

// ErrOutOfRange means a number is negative where it may not be, or too large to
// convert to what it counts (a duration that overflows, a quantity past its limit).
var ErrOutOfRange = errors.New("number out of range")

// ErrTooOld means a sample is older than its store keeps raw samples: stored, it
// would be deleted by the table's TTL at once while its rollups kept it, so it is
// refused instead (ingest dead-letters it as past_retention).
var ErrTooOld = errors.New("older than the raw retention")
