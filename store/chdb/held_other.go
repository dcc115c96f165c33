//go:build !linux

package chdb

import "path/filepath"

// statusFile is the file the engine locks in its data path.
func statusFile(path string) string { return filepath.Join(path, "status") }

// pathHeld is not known off Linux: the engine's own error stands.
func pathHeld(string) bool { return false }
