package chdbtest

import (
	"errors"
	"testing"

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
