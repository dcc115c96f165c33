package schemas

import (
	"errors"
	"fmt"
	"strings"
)

// FieldError is a configuration error that names its field by its path from the
// root of the configuration, e.g. "bus.embedded.port". Its text is "path: " and
// Err's; errors.As finds the path and errors.Is the cause through it.
type FieldError struct {
	// Path is the field's dotted path ("users[0].name" inside a list).
	Path string
	Err  error
	// inline marks a plain error PrefixFields wrapped: Err's text starts with
	// the rest of the field's name ("port: …"), so each of its lines reads as
	// Path + "." + the line, as PrefixFields has always written them.
	inline bool
}

func (e *FieldError) Error() string {
	if !e.inline {
		return e.Path + ": " + e.Err.Error()
	}
	lines := strings.Split(e.Err.Error(), "\n")
	for i, l := range lines {
		lines[i] = e.Path + "." + l
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the cause.
func (e *FieldError) Unwrap() error { return e.Err }

// Field returns err as the error of the field at path, or nil for a nil err.
func Field(path string, err error) error {
	if err == nil {
		return nil
	}
	return &FieldError{Path: path, Err: err}
}

// Fieldf returns a FieldError for the field at path whose cause is
// fmt.Errorf(format, args...) (%w wraps as usual).
func Fieldf(path, format string, args ...any) error {
	return &FieldError{Path: path, Err: fmt.Errorf(format, args...)}
}

// PrefixFields puts section and a dot before the path of each field error in err,
// so that the errors a nested configuration section's Validate joins name their
// field by its full path ("port: …" in bus.embedded becomes "bus.embedded.port:
// …"). It walks joined errors (errors.Join) and keeps them joined; any other error
// becomes a FieldError whose path is section, its text each line of err's after
// "section.". The text is the same as prefixing each line of err.Error(). It
// returns nil for a nil err.
func PrefixFields(section string, err error) error {
	if err == nil {
		return nil
	}
	if fe, ok := err.(*FieldError); ok {
		return &FieldError{Path: section + "." + fe.Path, Err: fe.Err, inline: fe.inline}
	}
	if errs, ok := joined(err); ok {
		out := make([]error, len(errs))
		for i, e := range errs {
			out[i] = PrefixFields(section, e)
		}
		return errors.Join(out...)
	}
	return &FieldError{Path: section, Err: err, inline: true}
}

// joined returns the errors err joins when its text is theirs one a line, as
// errors.Join's is (a fmt.Errorf with several %w has text of its own and is not
// walked).
func joined(err error) ([]error, bool) {
	u, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return nil, false
	}
	errs := u.Unwrap()
	msgs := make([]string, len(errs))
	for i, e := range errs {
		if e == nil {
			return nil, false
		}
		msgs[i] = e.Error()
	}
	return errs, len(errs) > 0 && strings.Join(msgs, "\n") == err.Error()
}
