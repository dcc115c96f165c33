package chdb

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
)

// statusFile is the file the engine locks in its data path.
func statusFile(path string) string { return filepath.Join(path, "status") }

// pathHeld reports whether another process holds the engine's lock on path's
// status file (a lock this process could take is released at once).
func pathHeld(path string) bool {
	f, err := os.Open(statusFile(path))
	if err != nil {
		return false
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	return errors.Is(err, syscall.EWOULDBLOCK)
}
