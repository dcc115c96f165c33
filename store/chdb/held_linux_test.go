package chdb_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/gpupool/gpupool/store/chdb"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

// holdEnv makes the test binary, started by TestStoreHeldByAnotherProcess, open
// the store at its path and hold it until its standard input closes; openEnv,
// try to open it while held.
const (
	holdEnv = "GPUPOOL_TEST_HOLD_STORE"
	openEnv = "GPUPOOL_TEST_OPEN_HELD_STORE"
)

// TestStoreHeldByAnotherProcess: while a second process (this test binary, run
// again) holds a data path, opening it fails with ErrStoreHeld naming that
// process's PID and command line and what to do, not the engine's raw lock error.
func TestStoreHeldByAnotherProcess(t *testing.T) {
	if path := os.Getenv(holdEnv); path != "" {
		holdStore(t, path)
		return
	}
	if path := os.Getenv(openEnv); path != "" {
		openHeld(t, path)
		return
	}
	path := filepath.Join(t.TempDir(), "chdb")
	cmd := exec.Command(os.Args[0], "-test.run=^TestStoreHeldByAnotherProcess$")
	cmd.Env = append(os.Environ(), holdEnv+"="+path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); _ = cmd.Wait() })
	sc := bufio.NewScanner(out)
	for sc.Scan() && sc.Text() != "holding" {
	}
	if sc.Err() != nil || sc.Text() != "holding" {
		t.Fatalf("the holder did not open the store: %v", sc.Err())
	}
	// The open runs in a third process too: this one must not load the library
	// (TestOpenMissingLibrary needs a process without it).
	opener := exec.Command(os.Args[0], "-test.run=^TestStoreHeldByAnotherProcess$")
	opener.Env = append(os.Environ(), openEnv+"="+path)
	got, err := opener.CombinedOutput()
	if err != nil {
		t.Fatalf("open of the held path: %v\n%s", err, got)
	}
	m := regexp.MustCompile(`(?m)^held (\d+) (.*)$`).FindStringSubmatch(string(got))
	if m == nil || m[1] != strconv.Itoa(cmd.Process.Pid) || !strings.Contains(m[2], "-test.run=^TestStoreHeldByAnotherProcess$") {
		t.Fatalf("opener said %q, want held by PID %d running the test binary", got, cmd.Process.Pid)
	}
	want := fmt.Sprintf("PID %d (%s) holds %s, and the embedded store opens in one process at a time: stop it first (Ctrl-C where it runs, or kill %d), then run this again", cmd.Process.Pid, m[2], path, cmd.Process.Pid)
	if !strings.Contains(string(got), want) || strings.Contains(string(got), "Code: 76") {
		t.Errorf("opener's output %q, want %q and not the engine's lock error", got, want)
	}
}

// openHeld opens the store at path, which another process holds, and prints
// "held <PID> <command>" and the error when it fails with ErrStoreHeld.
func openHeld(t *testing.T, path string) {
	cfg := chdbtest.Config(t)
	cfg.Path = path
	s, err := chdb.Open(cfg)
	if err == nil {
		s.Close()
		t.Fatal("opened a data path another process holds")
	}
	var held *chdb.HeldError
	if !errors.Is(err, chdb.ErrStoreHeld) || !errors.As(err, &held) {
		t.Fatalf("%v, want ErrStoreHeld", err)
	}
	fmt.Printf("held %d %s\n%v\n", held.PID, held.Command, err)
}

// holdStore opens the store at path, says so on standard output, and holds it
// until standard input closes.
func holdStore(t *testing.T, path string) {
	cfg := chdbtest.Config(t)
	cfg.Path = path
	s, err := chdb.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fmt.Println("holding")
	_, _ = bufio.NewReader(os.Stdin).ReadString(0)
}
