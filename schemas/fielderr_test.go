package schemas

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestPrefixFields(t *testing.T) {
	if PrefixFields("bus", nil) != nil {
		t.Error("PrefixFields(nil) is not nil")
	}
	err := PrefixFields("store", errors.Join(errors.New("a: bad"), PrefixFields("chdb", errors.New("path: empty"))))
	if got, want := err.Error(), "store.a: bad\nstore.chdb.path: empty"; got != want {
		t.Errorf("PrefixFields = %q, want %q", got, want)
	}
}

var errTooBig = errors.New("too big")

// TestFieldErrorPath: errors.As finds a nested field's full path, errors.Is the
// cause, and the text is the path and the cause's.
func TestFieldErrorPath(t *testing.T) {
	leaf := Fieldf("port", "%d: %w", 70000, errTooBig)
	err := PrefixFields("bus", PrefixFields("embedded", leaf))
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Path != "bus.embedded.port" {
		t.Fatalf("errors.As(%v) = %+v, want path bus.embedded.port", err, fe)
	}
	if !errors.Is(err, errTooBig) {
		t.Errorf("errors.Is(%v, errTooBig) = false", err)
	}
	if got, want := err.Error(), "bus.embedded.port: 70000: too big"; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
	if Field("x", nil) != nil {
		t.Error("Field(nil) is not nil")
	}
}

// TestPrefixFieldsJoined: each error a section joins keeps its own path, typed
// or plain, and the text is what prefixing each line gives.
func TestPrefixFieldsJoined(t *testing.T) {
	plain := errors.New("note: free text")
	section := errors.Join(Field("tls.cert", errTooBig), nil, PrefixFields("users[1]", errors.Join(Fieldf("name", "empty"), plain)))
	err := PrefixFields("store", section)
	want := map[string]string{ // path → text
		"store.tls.cert":      "store.tls.cert: too big",
		"store.users[1].name": "store.users[1].name: empty",
		"store.users[1]":      "store.users[1].note: free text",
	}
	var lines []string
	var walk func(error)
	walk = func(e error) {
		if u, ok := e.(interface{ Unwrap() []error }); ok {
			for _, c := range u.Unwrap() {
				walk(c)
			}
			return
		}
		fe, ok := e.(*FieldError)
		if !ok {
			t.Fatalf("%v (%T) is not a *FieldError", e, e)
		}
		if want[fe.Path] != fe.Error() {
			t.Errorf("path %q reads %q, want %q", fe.Path, fe.Error(), want[fe.Path])
		}
		lines = append(lines, fe.Error())
	}
	walk(err)
	if len(lines) != len(want) {
		t.Errorf("%d field errors, want %d: %q", len(lines), len(want), lines)
	}
	if got, want := err.Error(), "store.tls.cert: too big\nstore.users[1].name: empty\nstore.users[1].note: free text"; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
	if !errors.Is(err, errTooBig) || !errors.Is(err, plain) {
		t.Error("errors.Is lost a cause")
	}
}

// TestPrefixFieldsText: the text is each line of the error with the section
// before it, whatever the error is made of (a multi-line plain error, an error
// with several %w that is not a join).
func TestPrefixFieldsText(t *testing.T) {
	for _, err := range []error{
		errors.New("a: one\nb: two"),
		fmt.Errorf("x: %w and %w", errTooBig, errTooBig),
		fmt.Errorf("x: %w\n%w", errTooBig, errors.Join(errors.New("y: 1"), errors.New("z: 2"))),
		errors.Join(errors.New("a: one\nb: two"), Fieldf("c", "three")),
	} {
		var old []string
		for _, l := range strings.Split(err.Error(), "\n") {
			old = append(old, "s."+l)
		}
		if got := PrefixFields("s", err).Error(); got != strings.Join(old, "\n") {
			t.Errorf("PrefixFields(s, %q) = %q, want %q", err, got, strings.Join(old, "\n"))
		}
	}
}
