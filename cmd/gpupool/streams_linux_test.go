package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

// runMainEnv makes the test binary run gpupool's main on its arguments instead of
// the tests: gpupoolCmd's processes are gpupool as a user runs it, with their
// own standard output and error.
const runMainEnv = "GPUPOOL_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// gpupoolCmd is the test binary run as gpupool with args (killed with the test).
func gpupoolCmd(t *testing.T, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(t.Context(), os.Args[0], args...)
	cmd.Env = append(os.Environ(), runMainEnv+"=1", "GPUPOOL_CHDB_LIB="+chdbtest.LibPath())
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// run runs cmd and returns its standard output and error apart.
func run(t *testing.T, cmd *exec.Cmd) (stdout, stderr string, err error) {
	t.Helper()
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// logLine is a line of gpupool's log (slog's text handler).
var logLine = regexp.MustCompile(`(?m)^time=\S+ level=|level=(DEBUG|INFO|WARN|ERROR) msg=`)

// TestStdoutCarriesNoLogLines runs commands as a user does, at log level debug,
// with standard output and error apart: tables and results on stdout, every log
// line on stderr (the demo's INFO lines used to sit between its tables in a
// terminal; piped, stdout must hold only what the command prints).
func TestStdoutCarriesNoLogLines(t *testing.T) {
	dir := t.TempDir()
	base := []string{"--data-dir", dir, "--log-level", "debug"}
	// The demo's day: it ends at the start of today, UTC.
	start := time.Now().UTC().Truncate(24 * time.Hour).Add(-30 * time.Minute)
	day := start.Format(time.DateOnly)
	for _, tc := range []struct {
		name string
		args []string
		want string // on stdout
	}{
		{"demo", []string{"demo", "--start", start.Format(time.RFC3339), "--duration", "30m", "--speed", "0", "--clusters", "1", "--nodes", "2", "--gpus", "2", "--console=false"}, "GPU-hours by team and card type"},
		{"sql table", []string{"sql", "SELECT count() > 0 AS has_samples FROM gpu_samples"}, "has_samples"},
		{"sql csv", []string{"sql", "-f", "csv", "SELECT 1 AS one"}, "one\n1\n"},
		{"migrate", []string{"migrate", "--print"}, "CREATE"},
		{"report run", []string{"report", "run", "--period", day, "-f", "csv", "-o", filepath.Join(dir, "reports")}, "GPU chargeback " + day},
		{"capacity", []string{"capacity"}, "cluster"},
		{"token create", []string{"token", "create", "ci", "-r", "team:vision"}, "gpupool_"},
		{"token list", []string{"token", "list"}, "NAME"},
		{"version", []string{"version"}, "gpupool"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, err := run(t, gpupoolCmd(t, append(base, tc.args...)...))
			if err != nil {
				t.Fatalf("%v\nstderr:\n%s", err, stderr)
			}
			if !strings.Contains(stdout, tc.want) {
				t.Errorf("stdout lacks %q:\n%s", tc.want, stdout)
			}
			if m := logLine.FindString(stdout); m != "" {
				t.Errorf("a log line on stdout (%q):\n%s", m, stdout)
			}
			if tc.name == "demo" && !logLine.MatchString(stderr) {
				t.Errorf("the demo logged nothing on stderr at level debug:\n%s", stderr)
			}
		})
	}
}

// TestSQLNamesStoreHolder: gpupool sql while the console holds the embedded store
// fails naming the console's PID and command line and what to do, instead of
// the engine's raw lock error.
func TestSQLNamesStoreHolder(t *testing.T) {
	g, _ := sqlDataDir(t)
	console := gpupoolCmd(t, "--data-dir", g.DataDir, "console", "--listen", "127.0.0.1:0")
	out, err := console.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var consoleErr bytes.Buffer
	console.Stderr = &consoleErr
	if err := console.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = console.Process.Signal(os.Interrupt); _ = console.Wait() })
	sc := bufio.NewScanner(out)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "gpupool console: ") {
	}
	if !strings.HasPrefix(sc.Text(), "gpupool console: ") {
		t.Fatalf("the console did not start: %v\n%s", sc.Err(), consoleErr.String())
	}
	_, stderr, err := run(t, gpupoolCmd(t, "--data-dir", g.DataDir, "sql", "SELECT 1"))
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("sql while the console holds the store: %v, want exit status 1\n%s", err, stderr)
	}
	pid := console.Process.Pid
	want := fmt.Sprintf("gpupool: embedded store: PID %d (%s --data-dir %s console --listen 127.0.0.1:0) holds %s, and the embedded store opens in one process at a time: stop it first (Ctrl-C where it runs, or kill %d)",
		pid, os.Args[0], g.DataDir, filepath.Join(g.DataDir, "chdb"), pid)
	if !strings.Contains(stderr, want) || strings.Contains(stderr, "Code: 76") {
		t.Errorf("stderr:\n%s\nwant %q and not the engine's lock error", stderr, want)
	}
}
