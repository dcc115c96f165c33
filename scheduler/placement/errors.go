package placement

import "errors"

// ErrInvalidFleet means the fleet's configuration is malformed; the error's lines
// name each field at fault.
var ErrInvalidFleet = errors.New("invalid fleet")

// ErrInvalidRequest means a placement request is malformed or names something the
// fleet does not have (a card type, a MIG profile, a topology level, a cluster).
var ErrInvalidRequest = errors.New("invalid placement request")

// ErrNeverFits means a request could not be placed even on the empty fleet.
var ErrNeverFits = errors.New("request never fits the fleet")

// ErrTaken means a placement asks for a GPU or MIG slice that is already given
// to a job (or does not exist): the State refuses it, so nothing is given twice.
var ErrTaken = errors.New("GPU or slice already taken")

// ErrJobPlaced means a job ID is already placed; release it first.
var ErrJobPlaced = errors.New("job already placed")

// ErrUnknownJob means no placed job has the ID given.
var ErrUnknownJob = errors.New("no such placed job")
