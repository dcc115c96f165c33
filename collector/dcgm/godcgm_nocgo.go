//go:build !cgo

package dcgm

import "fmt"

// Without cgo go-dcgm cannot be compiled in and libdcgm.so.4 cannot be loaded, so
// New fails with ErrNoLibrary; the rest of the package (field mapping, alias
// table) builds and is tested as usual.

func probeLibrary() error {
	return fmt.Errorf("dcgm: %w (this binary was built with CGO_ENABLED=0; the DCGM source needs a cgo build)", ErrNoLibrary)
}

func openGoDCGM(Config) (engine, error) { return nil, probeLibrary() }
