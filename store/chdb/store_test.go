package chdb_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
	"github.com/gpupool/gpupool/store/storetest"
)

func TestMain(m *testing.M) { chdbtest.Main(m) }

func TestOpenMissingLibrary(t *testing.T) {
	cfg := chdbtest.Config(t)
	cfg.LibPath = filepath.Join(t.TempDir(), "no-such-libchdb.so")
	_, err := chdb.Open(cfg)
	if !errors.Is(err, chdb.ErrLibraryMissing) {
		t.Fatalf("Open with a missing library: err = %v, want ErrLibraryMissing", err)
	}
	for _, want := range []string{"no-such-libchdb.so", "make deps", "GPUPOOL_CHDB_LIB"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestOneDataPathPerProcess(t *testing.T) {
	s := chdbtest.Open(t)
	cfg := chdbtest.Config(t)
	cfg.Path = t.TempDir()
	_, err := chdb.Open(cfg)
	if !errors.Is(err, chdb.ErrPathInUse) {
		t.Fatalf("second data path while %s is open: err = %v, want ErrPathInUse", s.Path(), err)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*chdb.Config)
		want string
	}{
		{"no path", func(c *chdb.Config) { c.Path = "" }, "path"},
		{"bad database", func(c *chdb.Config) { c.Database = "a-b" }, "database"},
		{"no conns", func(c *chdb.Config) { c.Conns = 0 }, "conns"},
		{"tiny memory limit", func(c *chdb.Config) { c.MemoryLimitMiB = 64 }, "memory_limit_mib"},
		{"negative threads", func(c *chdb.Config) { c.MaxThreads = -1 }, "mark_cache_mib"},
		{"negative arenas", func(c *chdb.Config) { c.Arenas = -1 }, "arenas"},
		{"negative merge threads", func(c *chdb.Config) { c.MergeThreads = -1 }, "merge_threads"},
		{"too many merge threads", func(c *chdb.Config) { c.MergeThreads = 257 }, "merge_threads"},
		{"negative code release interval", func(c *chdb.Config) { c.ReleaseCodeEvery = -time.Minute }, "release_code_every"},
		{"code release every millisecond", func(c *chdb.Config) { c.ReleaseCodeEvery = time.Millisecond }, "release_code_every"},
		{"code release without the first", func(c *chdb.Config) { c.ReleaseCodeEvery, c.ReleaseStartupCode = time.Minute, false }, "release_code_every"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := chdb.DefaultConfig()
			tt.edit(&cfg)
			if err := cfg.Validate(); err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want an error naming %q", err, tt.want)
			}
		})
	}
}

// TestEngineSettings checks that the configured settings reach the engine:
// max_threads is per connection, so a store opened with it sees it even though
// the process's engine was started by another.
func TestEngineSettings(t *testing.T) {
	cfg := chdbtest.Config(t)
	cfg.MaxThreads = 3
	s, err := chdb.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	res, err := s.Query(t.Context(), "SELECT toUInt64(getSetting('max_threads')) AS n", nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.Int(0, "n"); n != 3 {
		t.Fatalf("max_threads = %d, want 3", n)
	}
	if err := chdb.LeanConfig().Validate(); err != nil {
		t.Fatalf("LeanConfig: %v", err)
	}
}

// TestLeanKeepsPlace: Lean changes the engine's tuning only, so a command's lean
// defaults keep where its data is; LeanConfig is the default's Lean.
func TestLeanKeepsPlace(t *testing.T) {
	c := chdb.DefaultConfig()
	c.Path, c.LibPath, c.Database = "/data/x", "/lib/libchdb.so", "other"
	l := c.Lean()
	if l.Path != c.Path || l.LibPath != c.LibPath || l.Database != c.Database || l.ReadOnly != c.ReadOnly {
		t.Errorf("Lean() moved the data: %+v from %+v", l, c)
	}
	if l.Conns != 1 || l.MergeThreads != 1 || l.Arenas != 1 || l.MemoryLimitMiB == 0 || l.ReleaseCodeEvery == 0 {
		t.Errorf("Lean() = %+v, want one connection, one merge, one arena, a memory cap and the code released as it writes", l)
	}
	if chdb.LeanConfig() != chdb.DefaultConfig().Lean() {
		t.Error("LeanConfig() is not DefaultConfig().Lean()")
	}
}

// TestStore holds the embedded store to the behaviour every backend shares.
func TestStore(t *testing.T) {
	storetest.Run(t, storetest.Backend{
		Open: func(t *testing.T) store.Store { return chdbtest.Open(t) },
		Reopen: func(t *testing.T, s store.Store, readOnly bool) store.Store {
			cfg := chdbtest.Config(t)
			cfg.Database, cfg.ReadOnly = s.Database(), readOnly
			s2, err := chdb.Open(cfg)
			if err != nil {
				t.Fatalf("reopen %s: %v", cfg.Database, err)
			}
			t.Cleanup(func() { _ = s2.Close() })
			return s2
		},
	})
}

// TestInsertChecksTypesAfterAlter: the column types Insert checks against are
// the table's as it is now, not as the last insert found it.
func TestInsertChecksTypesAfterAlter(t *testing.T) {
	ctx := t.Context()
	s := chdbtest.Open(t)
	if err := s.Exec(ctx, "CREATE TABLE a (k UInt8, c UInt32) ENGINE = MergeTree ORDER BY k", nil); err != nil {
		t.Fatal(err)
	}
	block := func(v uint32) *store.Block {
		c := store.NewUInt32("c")
		c.Append(v)
		return store.NewBlock(c)
	}
	if err := s.Insert(ctx, "a", block(1), ""); err != nil {
		t.Fatal(err)
	}
	if err := s.Exec(ctx, "ALTER TABLE a MODIFY COLUMN c UInt16", nil); err != nil {
		t.Fatal(err)
	}
	err := s.Insert(ctx, "a", block(70000), "")
	if !errors.Is(err, store.ErrNarrowing) || !strings.Contains(err.Error(), "into a: column c (UInt32 into UInt16)") {
		t.Fatalf("insert after narrowing the column: err = %v, want ErrNarrowing naming table a, column c and both types", err)
	}
	if err := s.Exec(ctx, "ALTER TABLE a MODIFY COLUMN c UInt64", nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Insert(ctx, "a", block(70000), ""); err != nil {
		t.Fatalf("insert after widening the column again: %v", err)
	}
	if n := storetest.Count(t, s, "a"); n != 2 {
		t.Errorf("%d rows, want 2", n)
	}
}

func TestOtherPathAfterEveryStoreClosed(t *testing.T) {
	ctx := context.Background()
	// Close the shared-path stores other tests may hold open: none are open
	// between tests, since each closes its own in Cleanup.
	a := chdbtest.Config(t)
	a.Path = t.TempDir()
	s, err := chdb.Open(a)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Exec(ctx, "CREATE TABLE only_in_a (x UInt8) ENGINE = MergeTree ORDER BY x", nil); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	b := a
	b.Path = t.TempDir()
	s2, err := chdb.Open(b)
	if err != nil {
		t.Fatalf("open another path once the first is closed: %v", err)
	}
	defer s2.Close()
	res, err := s2.Query(ctx, "SELECT count() AS n FROM system.tables WHERE database = currentDatabase() AND name = 'only_in_a'", nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.Int(0, "n"); n != 0 {
		t.Fatal("the second path sees the first path's table")
	}
}
