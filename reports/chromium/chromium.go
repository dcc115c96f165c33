// Package chromium finds the headless Chromium the browser tests drive (the HTML
// report's and the console's).
package chromium

import (
	"os"
	"os/exec"
	"testing"
)

// Path finds a headless Chromium: $GPUPOOL_CHROMIUM, else chromium on PATH.
// Without one the test fails under CI (CI=true), where `make deps` installs it, and
// is skipped elsewhere, saying so.
func Path(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("GPUPOOL_CHROMIUM"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("GPUPOOL_CHROMIUM=%s: %v", p, err)
		}
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const why = "no headless Chromium (set GPUPOOL_CHROMIUM or run `make deps`, which installs the Debian package chromium)"
	if os.Getenv("CI") == "true" {
		t.Fatal(why)
	}
	t.Skip(why)
	return ""
}
