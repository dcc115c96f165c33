//go:build !linux

package chdb

import "errors"

// releaseCode is Linux only (MADV_PAGEOUT).
func releaseCode(string, bool) (before, after uint64, err error) {
	return 0, 0, errors.New("releasing the engine's start-up code pages needs Linux (MADV_PAGEOUT)")
}

// ReleaseProgramCode is Linux only (MADV_PAGEOUT).
func ReleaseProgramCode() (before, after uint64, err error) {
	return 0, 0, errors.New("releasing the program's code pages needs Linux (MADV_PAGEOUT)")
}
