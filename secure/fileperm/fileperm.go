package fileperm

import (
	"fmt"
	"io/fs"
	"log/slog"
	"os"
)

// Modes of gpupool's data: owner only.
const (
	// Dir is the mode of every data directory gpupool creates.
	Dir fs.FileMode = 0o700
	// File is the mode of every data file gpupool creates.
	File fs.FileMode = 0o600
	// open are the group and other bits: none may be set on data.
	open fs.FileMode = 0o077
)

// MkdirAll creates dir (and missing parents) with mode Dir. An existing dir that
// group or others may enter is tightened to Dir, with a warning on log (nil: no
// log).
func MkdirAll(dir string, log *slog.Logger) error {
	if err := os.MkdirAll(dir, Dir); err != nil {
		return err
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s: not a directory", dir)
	}
	return tighten(dir, fi.Mode(), Dir, log)
}

// OpenFile opens path as os.OpenFile does, creating it with mode File; an
// existing file that group or others may read is tightened to File, with a
// warning on log (nil: no log).
func OpenFile(path string, flag int, log *slog.Logger) (*os.File, error) {
	f, err := os.OpenFile(path, flag, File)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && fi.Mode().Perm()&open != 0 {
		if err = f.Chmod(File); err == nil {
			warn(log, path, fi.Mode().Perm(), File)
		}
	}
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// WriteFile writes data to path with mode File, tightening an existing file as
// OpenFile does.
func WriteFile(path string, data []byte, log *slog.Logger) error {
	f, err := OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, log)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// Tighten removes the group and other bits of an existing path (a file mode
// File, a directory Dir), with a warning on log (nil: no log) when it had any. A
// path that does not exist is no error.
func Tighten(path string, log *slog.Logger) error {
	fi, err := os.Stat(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	want := File
	if fi.IsDir() {
		want = Dir
	}
	return tighten(path, fi.Mode(), want, log)
}

// Private reports whether mode has no group or other bits.
func Private(mode fs.FileMode) bool { return mode.Perm()&open == 0 }

func tighten(path string, mode, want fs.FileMode, log *slog.Logger) error {
	if Private(mode) {
		return nil
	}
	if err := os.Chmod(path, want); err != nil {
		return fmt.Errorf("%s: restrict to owner (%s): %w", path, want, err)
	}
	warn(log, path, mode.Perm(), want)
	return nil
}

func warn(log *slog.Logger, path string, was, now fs.FileMode) {
	if log != nil {
		log.Warn("data path was open to other users; restricted to its owner", "path", path,
			"was", fmt.Sprintf("%04o", uint32(was)), "now", fmt.Sprintf("%04o", uint32(now)))
	}
}
