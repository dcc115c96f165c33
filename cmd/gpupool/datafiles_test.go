package main

import (
	"bytes"
	"io/fs"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

// TestAttackDataFilesPrivate: after a run (the demo: embedded NATS, chDB,
// collectors, ingest, analyzer, scheduler, reports) every file and directory
// gpupool created in its data directory is its owner's alone, those NATS and
// chDB create for themselves included: none has a group or other bit.
func TestAttackDataFilesPrivate(t *testing.T) {
	old := syscall.Umask(0o022) // as a shell leaves it: the command must not rely on it
	t.Cleanup(func() { syscall.Umask(old) })
	dataDir := filepath.Join(t.TempDir(), "data")
	g := &Globals{DataDir: dataDir, CHDBLib: chdbtest.LibPath(), LogLevel: "error"}
	var out bytes.Buffer
	d := &DemoCmd{Duration: time.Hour, Speed: 0, Clusters: 1, Nodes: 1, GPUs: 2, out: &out}
	if err := d.Run(g, t.Context()); err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	files := 0
	err := filepath.WalkDir(dataDir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			files++
		}
		if fi.Mode()&fs.ModeSymlink == 0 && fi.Mode().Perm()&0o077 != 0 { // a link's own mode means nothing
			rel, _ := filepath.Rel(dataDir, p)
			t.Errorf("%s: mode %04o, want no group or other bits", rel, fi.Mode().Perm())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 10 {
		t.Fatalf("only %d files under the data directory: the demo wrote little", files)
	}
}
