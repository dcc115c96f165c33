package ingest

import (
	"errors"
	"fmt"

	"github.com/gpupool/gpupool/schemas"
)

func errInvalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", schemas.ErrInvalidValue, fmt.Sprintf(format, args...))
}

// deadLetterReason classifies why a message could not be stored, for the metric
// label and the Gpupool-Reason header.
func deadLetterReason(err error) string {
	switch {
	case errors.Is(err, schemas.ErrSchemaVersion):
		return "schema_version"
	case errors.Is(err, schemas.ErrInvalidIdentifier):
		return "invalid_identifier"
	case errors.Is(err, schemas.ErrInvalidValue):
		return "invalid_value"
	case errors.Is(err, schemas.ErrMalformed):
		return "malformed"
	}
	return "other"
}
