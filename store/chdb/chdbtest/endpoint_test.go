package chdbtest

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/store/chdb"
)

func TestEndpointServesAndStops(t *testing.T) {
	ep, err := StartEndpoint(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	got, err := ep.query(t.Context(), "SELECT sum(number) FROM numbers(10)")
	if err != nil || got != "45\n" {
		t.Fatalf("query over HTTP = %q, %v; want 45", got, err)
	}
	if ep.Version == "" {
		t.Error("no version")
	}
	ep.Stop()
	if ep.cmd.ProcessState == nil || !ep.cmd.ProcessState.Exited() {
		t.Errorf("endpoint process after Stop: %v", ep.cmd.ProcessState)
	}
	if _, err := ep.query(t.Context(), "SELECT 1"); err == nil {
		t.Error("the endpoint still answers after Stop")
	}
}

func TestEndpointWithoutLibrary(t *testing.T) {
	t.Setenv("GPUPOOL_CHDB_LIB", t.TempDir()+"/libchdb.so")
	if _, err := StartEndpoint(t.Context(), t.TempDir()); !errors.Is(err, chdb.ErrLibraryMissing) {
		t.Fatalf("StartEndpoint without the library: %v; want ErrLibraryMissing", err)
	}
}

// TestEndpointDiesWithParent kills a test binary that started an endpoint, as a
// -timeout or a crash would, and waits for the endpoint to stop answering.
func TestEndpointDiesWithParent(t *testing.T) {
	if os.Getenv("GPUPOOL_CHDBTEST_PARENT") == "1" {
		ep, err := StartEndpoint(t.Context(), t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("endpoint=%s\n", ep.HTTPAddr)
		select {} // until killed
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestEndpointDiesWithParent$", "-test.v")
	cmd.Env = append(os.Environ(), "GPUPOOL_CHDBTEST_PARENT=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(out)
	var addr string
	for sc.Scan() {
		if a, ok := strings.CutPrefix(sc.Text(), "endpoint="); ok {
			addr = a
			break
		}
	}
	if addr == "" {
		t.Fatalf("the parent printed no endpoint (%v)", sc.Err())
	}
	ep := &Endpoint{HTTPAddr: addr}
	if _, err := ep.query(t.Context(), "SELECT 1"); err != nil {
		t.Fatalf("endpoint of the parent: %v", err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	deadline := time.After(30 * time.Second)
	for {
		if _, err := ep.query(t.Context(), "SELECT 1"); err != nil {
			return
		}
		select {
		case <-deadline:
			t.Fatal("the endpoint outlived its parent by 30 s")
		case <-time.After(50 * time.Millisecond):
		}
	}
}
