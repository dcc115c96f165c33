//go:build !unix

package auth

import "io/fs"

// lockTokens does nothing where flock is missing: edits still land whole (the
// temporary file and rename), and two at once may lose one.
func lockTokens(string) (unlock func(), err error) { return func() {}, nil }

// fileOwner is unknown where files have no uid.
func fileOwner(fs.FileInfo) (int, bool) { return 0, false }
