//go:build !cgo

package dcgm

import (
	"errors"
	"strings"
	"testing"
)

func TestNewWithoutCgo(t *testing.T) {
	s, err := New(DefaultConfig(), nil)
	if !errors.Is(err, ErrNoLibrary) || s != nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Fatalf("New = %v, %v; want ErrNoLibrary saying the binary lacks cgo", s, err)
	}
}
