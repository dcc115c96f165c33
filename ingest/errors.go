package ingest

import (
	"errors"
	"fmt"

	"github.com/gpupool/gpupool/schemas"
)

// Node restriction (docs/bus-security.md): a message may speak only for the
// identity its subject grants, and a job's owner is fixed once given.
var (
	// ErrSubjectMismatch: a sample batch names a cluster or node, or a job event a
	// cluster, other than the subject the server delivered it on, or it came on a
	// subject that grants no identity.
	ErrSubjectMismatch = errors.New("payload names another identity than its subject")
	// ErrSourceNotAllowed: a job event of source scheduler came on a subject other
	// than the scheduler's (gpupool.jobs.<cluster>.scheduler), or an event of
	// another source came on the scheduler's.
	ErrSourceNotAllowed = errors.New("job event source not allowed on its subject")
	// ErrIdentityChanged: a job event changes the cluster, team, project or queue a
	// job was first given.
	ErrIdentityChanged = errors.New("job event changes its job's identity")
)

// errTransient marks a failure to check a message that says nothing about the
// message (the store could not be read): it is redelivered, not dead-lettered.
var errTransient = errors.New("transient")

func errInvalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", schemas.ErrInvalidValue, fmt.Sprintf(format, args...))
}

// deadLetterReason classifies why a message could not be stored, for the metric
// label and the Gpupool-Reason header.
func deadLetterReason(err error) string {
	switch {
	case errors.Is(err, schemas.ErrTooOld):
		return "past_retention"
	case errors.Is(err, schemas.ErrSchemaVersion):
		return "schema_version"
	case errors.Is(err, schemas.ErrInvalidIdentifier):
		return "invalid_identifier"
	case errors.Is(err, schemas.ErrInvalidValue):
		return "invalid_value"
	case errors.Is(err, schemas.ErrMalformed):
		return "malformed"
	case errors.Is(err, ErrSubjectMismatch):
		return "subject_mismatch"
	case errors.Is(err, ErrSourceNotAllowed):
		return "source_not_allowed"
	case errors.Is(err, ErrIdentityChanged):
		return "identity_changed"
	}
	return "other"
}
