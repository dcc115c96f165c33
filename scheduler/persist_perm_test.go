package scheduler

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestAttackJobStatePrivate: the job state and its journal say who runs what;
// they are the owner's alone (0600 in a 0700 directory), and a directory and
// files an older release left open to others are restricted at start.
func TestAttackJobStatePrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "scheduler")
	state := filepath.Join(dir, "jobs.json")
	h := newHarness(t, testConfig(), WithStateFile(state))
	h.submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 8, Card: "H100-80GB"})
	h.pass()
	h.submit(JobSpec{Team: "team-b", Queue: "b", GPUs: 2, Card: "H100-80GB"})
	h.pass()
	wantPrivateTree(t, dir, 2)

	// As an older release left it: everyone may read.
	if err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := fs.FileMode(0o644)
		if d.IsDir() {
			mode = 0o755
		}
		return os.Chmod(p, mode)
	}); err != nil {
		t.Fatal(err)
	}
	h.start(testConfig(), WithStateFile(state))
	h.submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 1, Card: "H100-80GB"})
	h.pass()
	wantPrivateTree(t, dir, 2)
}

// wantPrivateTree fails for every path under root with a group or other bit,
// and if fewer than min files are there.
func wantPrivateTree(t *testing.T, root string, min int) {
	t.Helper()
	files := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if !d.IsDir() {
			files++
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: mode %04o, want no group or other bits", p, fi.Mode().Perm())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < min {
		t.Fatalf("%d files under %s, want at least %d", files, root, min)
	}
}
