package schemas

import (
	"errors"
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
