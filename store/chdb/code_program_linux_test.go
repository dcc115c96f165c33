//go:build linux

package chdb_test

import (
	"testing"

	"github.com/gpupool/gpupool/store/chdb"
)

// TestReleaseProgramCode: the test binary's start-up code (every package's
// initialisation) is released, without the engine loaded for it.
func TestReleaseProgramCode(t *testing.T) {
	before, after, err := chdb.ReleaseProgramCode()
	if err != nil {
		t.Fatal(err)
	}
	if before == 0 || after >= before {
		t.Errorf("file-backed resident memory %d KiB before, %d KiB after: nothing released", before>>10, after>>10)
	}
	t.Logf("file-backed resident memory %d → %d KiB", before>>10, after>>10)
}
