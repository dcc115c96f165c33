// Package chdbtest gives tests an embedded store of their own: a fresh database on
// the test binary's one chDB data path (the engine holds one path per process, so
// tests are isolated by database, not by directory).
package chdbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb"
)

var shared struct {
	once sync.Once
	dir  string
	err  error
}

// Dir returns the test binary's chDB data path, creating it on first use.
func Dir() (string, error) {
	shared.once.Do(func() {
		shared.dir, shared.err = os.MkdirTemp("", "gpupool-chdb-test-")
	})
	return shared.dir, shared.err
}

// Main runs the tests of a package that uses Open or SharedEndpoint, then removes
// the data path and stops the endpoint. Call it from TestMain:
// func TestMain(m *testing.M) { chdbtest.Main(m) }.
func Main(m *testing.M) {
	code := m.Run()
	stopShared()
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// LibPath is the libchdb.so tests use: $GPUPOOL_CHDB_LIB or the make deps cache.
func LibPath() string {
	if p := os.Getenv("GPUPOOL_CHDB_LIB"); p != "" {
		return p
	}
	return chdb.DefaultLibPath()
}

// Config returns a store configuration with a new, unique database name.
func Config(t testing.TB) chdb.Config {
	t.Helper()
	dir, err := Dir()
	if err != nil {
		t.Fatalf("chdbtest: data dir: %v", err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	cfg := chdb.DefaultConfig()
	cfg.Path = dir
	cfg.LibPath = LibPath()
	cfg.Database = fmt.Sprintf("t_%s", hex.EncodeToString(b[:]))
	return cfg
}

// Open opens a store on a new database and closes it (dropping the database, even
// when the test closed the store) when the test ends. It fails the test, rather
// than skipping it, when libchdb.so is missing: `make test` installs it, and a
// skipped store test would hide a broken store.
func Open(t testing.TB) *chdb.Store {
	t.Helper()
	cfg := Config(t)
	s, err := chdb.Open(cfg)
	if err != nil {
		t.Fatalf("chdbtest: open embedded store: %v", err)
	}
	t.Cleanup(func() {
		drop := "DROP DATABASE IF EXISTS " + s.Database()
		// A test that closed the store itself still leaves no database behind.
		if err := s.Exec(context.Background(), drop, nil); errors.Is(err, store.ErrClosed) {
			if s2, err := chdb.Open(cfg); err == nil {
				_ = s2.Exec(context.Background(), drop, nil)
				_ = s2.Close()
			}
		}
		_ = s.Close()
	})
	return s
}
