package schemas

import (
	"errors"
	"strings"
)

// PrefixFields puts section and a dot before each line of err, so that the errors
// a nested configuration section's Validate joins name their field by its full
// path ("port: …" in bus.embedded becomes "bus.embedded.port: …"). It returns nil
// for a nil err.
func PrefixFields(section string, err error) error {
	if err == nil {
		return nil
	}
	lines := strings.Split(err.Error(), "\n")
	errs := make([]error, len(lines))
	for i, l := range lines {
		errs[i] = errors.New(section + "." + l)
	}
	return errors.Join(errs...)
}
