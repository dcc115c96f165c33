//go:build unix

package auth

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// lockTokens takes an exclusive lock on the tokens file's lock file (".<name>.lock"
// in its folder, made 0600 with the folder 0700 if missing), waiting for another
// edit to finish; unlock releases it.
func lockTokens(path string) (unlock func(), err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "."+filepath.Base(path)+".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("auth: lock tokens file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("auth: lock tokens file %s: %w", f.Name(), err)
	}
	return func() { f.Close() }, nil // closing releases the lock
}

// fileOwner is the uid owning the file st describes.
func fileOwner(st fs.FileInfo) (int, bool) {
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(s.Uid), true
}
