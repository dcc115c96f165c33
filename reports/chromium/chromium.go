// Package chromium finds the headless Chromium the browser tests drive (the HTML
// report's and the console's).
package chromium

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
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

// Browser starts a headless Chromium (Path) on a fresh profile with a window of
// width × height CSS pixels and returns a context driving one tab of it; it ends
// with the test.
func Browser(t testing.TB, width, height int) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(Path(t)),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.NoFirstRun, chromedp.Flag("disable-sync", true), chromedp.Flag("hide-scrollbars", true), chromedp.Flag("force-device-scale-factor", "1"),
		chromedp.UserDataDir(filepath.Join(t.TempDir(), "profile")), chromedp.WindowSize(width, height),
	}
	actx, cancel := chromedp.NewExecAllocator(t.Context(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	ctx, cancel3 := context.WithTimeout(ctx, 4*time.Minute)
	t.Cleanup(cancel3)
	return ctx
}
