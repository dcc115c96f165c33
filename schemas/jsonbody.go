package schemas

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// ErrTrailingData means a JSON body held more after its one value: a second
// object, or bytes that are not JSON.
var ErrTrailingData = errors.New("data after the JSON value")

// DecodeJSON reads exactly one JSON value from r into v, refusing fields v does
// not have and anything but white space after the value ({"a":1}garbage and
// {}{} are errors, where encoding/json's Decoder would stop after the first
// value and leave the rest unread). Every request body is read with it. The
// caller bounds r.
func DecodeJSON(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("empty, want a JSON object")
		}
		return err
	}
	// One more token means more data; io.EOF means there was none. A token that
	// does not parse is data too.
	end := dec.InputOffset()
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w at offset %d: send one JSON value per request", ErrTrailingData, end)
	}
	return nil
}
