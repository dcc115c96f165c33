package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gpupool/gpupool/internal/config"
	"github.com/gpupool/gpupool/store/chdb"
)

// TestIngestDefaultsAreLean: `gpupool ingest` without a file runs the lean engine
// and sets Go's memory limit; a key in the file wins over its lean default; the
// other commands keep the engine's defaults.
func TestIngestDefaultsAreLean(t *testing.T) {
	g := &Globals{base: new(config.IngestDefault())}
	c, err := g.loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	want := chdb.DefaultConfig().Lean()
	want.Path = ""
	if c.Store.CHDB != want {
		t.Errorf("ingest's engine without a file = %+v, want lean %+v", c.Store.CHDB, want)
	}
	if c.Ingest.GoMemoryLimitMiB == 0 {
		t.Error("ingest sets no Go memory limit by default")
	}
	if d := config.Default().Store.CHDB; d.Conns == 1 || d.MergeThreads == 1 {
		t.Errorf("the other commands' engine defaults are lean: %+v", d)
	}

	f := filepath.Join(t.TempDir(), "gpupool.yaml")
	if err := os.WriteFile(f, []byte("store:\n  chdb:\n    merge_threads: 4\ningest:\n  go_memory_limit_mib: 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g.Config = f
	c, err = g.loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	if c.Store.CHDB.MergeThreads != 4 || c.Store.CHDB.Conns != 1 || c.Ingest.GoMemoryLimitMiB != 0 {
		t.Errorf("with the file: merge_threads %d (want 4, the file's), conns %d (want 1, lean), go_memory_limit_mib %d (want 0, the file's)",
			c.Store.CHDB.MergeThreads, c.Store.CHDB.Conns, c.Ingest.GoMemoryLimitMiB)
	}
}
