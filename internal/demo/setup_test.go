package demo

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// fakeGo writes a `go` that answers `go list -deps` with 40 packages and
// `go build -v` with the first built of them (none from a warm cache), and
// exits with rc.
func fakeGo(t *testing.T, built int, rc string) string {
	t.Helper()
	dir := t.TempDir()
	script := `#!/bin/sh
case "$1" in
list) i=0; while [ $i -lt 40 ]; do echo "example.com/p$i"; i=$((i+1)); done ;;
build) i=0; while [ $i -lt ` + strconv.Itoa(built) + ` ]; do echo "example.com/p$i" >&2; i=$((i+1)); done
       [ "` + rc + `" = 0 ] || echo "./main.go:3:2: undefined: x" >&2 ;;
esac
exit ` + rc + "\n"
	if err := os.WriteFile(filepath.Join(dir, "go"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestFirstBuildSaysWhatItDoes: `make demo`'s build (tools/progress.sh build)
// says what it compiles and how many packages it compiled on a cold cache,
// prints nothing on a warm one, and passes a compiler error and the exit
// status through.
func TestFirstBuildSaysWhatItDoes(t *testing.T) {
	script, err := filepath.Abs("../../tools/progress.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		built int
		rc    string
		want  []string
		quiet bool
	}{
		{name: "cold", built: 35, rc: "0", want: []string{"compiling ./cmd/gpupool: 40 packages", "compiled 35 packages in 0m"}},
		{name: "warm", built: 0, rc: "0", quiet: true},
		{name: "a few packages changed", built: 4, rc: "0", quiet: true},
		{name: "compile error", built: 25, rc: "1", want: []string{"compiling ./cmd/gpupool", "./main.go:3:2: undefined: x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(script, "build", filepath.Join(t.TempDir(), "gpupool"), "./cmd/gpupool")
			cmd.Env = append(os.Environ(), "PATH="+fakeGo(t, tc.built, tc.rc)+":"+os.Getenv("PATH"))
			out, err := cmd.CombinedOutput()
			if (err != nil) != (tc.rc != "0") {
				t.Fatalf("exit %v, want status %s; output:\n%s", err, tc.rc, out)
			}
			if tc.quiet && len(out) != 0 {
				t.Errorf("a build from the cache printed:\n%s", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestStepSaysNothingWhenQuick: a step done within 3 s (the modules already
// downloaded) prints nothing; a failing one passes its status through.
func TestStepSaysNothingWhenQuick(t *testing.T) {
	script, err := filepath.Abs("../../tools/progress.sh")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(script, "step", "downloading Go modules", "true").CombinedOutput()
	if err != nil || len(out) != 0 {
		t.Errorf("quick step: err %v, output %q; want none", err, out)
	}
	if out, err := exec.Command(script, "step", "fetching", "false").CombinedOutput(); err == nil {
		t.Errorf("a failed step exited 0 (output %q)", out)
	}
}
