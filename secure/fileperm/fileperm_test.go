package fileperm

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCreatesPrivate: new directories and files are 0700 and 0600 whatever the
// umask, and existing ones open to others are restricted with a warning.
func TestCreatesPrivate(t *testing.T) {
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	root := t.TempDir()

	dir := filepath.Join(root, "a", "b")
	if err := MkdirAll(dir, log); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "f")
	if err := WriteFile(file, []byte("x"), log); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(root, "a"), dir, file} {
		if fi, err := os.Stat(p); err != nil || !Private(fi.Mode()) {
			t.Errorf("%s: %v, %v; want no group or other bits", p, fi.Mode(), err)
		}
	}
	if logged.Len() != 0 {
		t.Errorf("warned about paths it created: %s", logged.String())
	}

	open := filepath.Join(root, "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	openFile := filepath.Join(open, "data")
	if err := os.WriteFile(openFile, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(open, 0o755)
	_ = os.Chmod(openFile, 0o644)
	if err := MkdirAll(open, log); err != nil {
		t.Fatal(err)
	}
	f, err := OpenFile(openFile, os.O_RDONLY, log)
	if err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	for p, want := range map[string]os.FileMode{open: Dir, openFile: File} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v, %v; want %v", p, fi.Mode().Perm(), err, want)
		}
	}
	if n := strings.Count(logged.String(), "open to other users"); n != 2 {
		t.Errorf("%d warnings, want one per path tightened:\n%s", n, logged.String())
	}
	if err := Tighten(filepath.Join(root, "none"), log); err != nil {
		t.Errorf("Tighten of a missing path: %v", err)
	}
}
