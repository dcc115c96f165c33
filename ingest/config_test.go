package ingest

import (
	"os"
	"runtime/debug"
	"strings"
	"testing"
)

// TestConfigGoMemoryLimit: the default sets a limit, a limit too small to run is
// refused naming its field, and 0 is allowed (none).
func TestConfigGoMemoryLimit(t *testing.T) {
	c := DefaultConfig()
	if c.GoMemoryLimitMiB != DefaultGoMemoryLimitMiB || DefaultGoMemoryLimitMiB == 0 {
		t.Fatalf("default go_memory_limit_mib = %d, want %d (not 0)", c.GoMemoryLimitMiB, DefaultGoMemoryLimitMiB)
	}
	c.GoMemoryLimitMiB = 8
	if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), "go_memory_limit_mib: 8") {
		t.Errorf("Validate() = %v, want an error naming go_memory_limit_mib", err)
	}
	c.GoMemoryLimitMiB = 0
	if err := c.Validate(); err != nil {
		t.Errorf("Validate() with no limit = %v", err)
	}
}

// TestApplyMemoryLimit sets the runtime's limit from the configuration, sets
// none at 0, and leaves an operator's GOMEMLIMIT standing.
func TestApplyMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	t.Setenv("GOMEMLIMIT", "") // t.Setenv restores it; unset below
	c := DefaultConfig()

	unsetenv(t)
	if got := c.ApplyMemoryLimit(nil); got != 64<<20 {
		t.Errorf("ApplyMemoryLimit() = %d, want %d", got, 64<<20)
	}
	if got := debug.SetMemoryLimit(-1); got != 64<<20 {
		t.Errorf("runtime limit = %d, want %d", got, 64<<20)
	}

	debug.SetMemoryLimit(before)
	c.GoMemoryLimitMiB = 0
	if got := c.ApplyMemoryLimit(nil); got != -1 || debug.SetMemoryLimit(-1) != before {
		t.Errorf("at 0: ApplyMemoryLimit() = %d and the runtime's limit changed", got)
	}

	c.GoMemoryLimitMiB = 128
	t.Setenv("GOMEMLIMIT", "1GiB")
	if got := c.ApplyMemoryLimit(nil); got != -1 || debug.SetMemoryLimit(-1) != before {
		t.Errorf("with GOMEMLIMIT set: ApplyMemoryLimit() = %d and the runtime's limit changed", got)
	}
}

// unsetenv removes GOMEMLIMIT for the rest of the test (t.Setenv, called first,
// restores it afterwards).
func unsetenv(t *testing.T) {
	t.Helper()
	if err := os.Unsetenv("GOMEMLIMIT"); err != nil {
		t.Fatal(err)
	}
}
