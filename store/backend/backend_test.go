package backend

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

func TestMain(m *testing.M) { chdbtest.Main(m) }

// TestOpenMigratedThenReadOnly migrates a new embedded database, then opens it
// read-only: the tables are there and a write is refused.
func TestOpenMigratedThenReadOnly(t *testing.T) {
	c := DefaultConfig()
	c.CHDB = chdbtest.Config(t)
	ctx := t.Context()
	s, err := OpenMigrated(ctx, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Exec(context.Background(), "DROP DATABASE IF EXISTS "+s.Database(), nil) })
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ro, err := OpenExisting(ctx, c, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	res, err := ro.Query(ctx, "SELECT count() AS n FROM system.tables WHERE database = '"+c.CHDB.Database+"' AND name = 'gpu_samples'", nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.Int(0, "n"); n != 1 {
		t.Fatalf("gpu_samples tables: %d, want 1", n)
	}
	if err := ro.Exec(ctx, "CREATE TABLE "+c.CHDB.Database+".x (a UInt8) ENGINE = Memory", nil); err == nil {
		t.Fatal("a read-only store accepted CREATE TABLE")
	}
}

// TestOpenExistingWithoutDatabase says what to do instead of creating an empty
// database.
func TestOpenExistingWithoutDatabase(t *testing.T) {
	c := DefaultConfig()
	c.CHDB.Path = filepath.Join(t.TempDir(), "none")
	_, err := OpenExisting(t.Context(), c, nil, true)
	if !errors.Is(err, ErrNoDatabase) || !strings.Contains(err.Error(), "gpupool demo") {
		t.Fatalf("err = %v, want ErrNoDatabase saying to run gpupool demo", err)
	}
}

// TestConfig checks validation names the field, and the migrations are rendered
// for the backend in use.
func TestConfig(t *testing.T) {
	c := DefaultConfig()
	c.Backend = "postgres"
	if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), "backend:") {
		t.Errorf("Validate() = %v, want an error naming backend", err)
	}
	c = DefaultConfig()
	c.RawTTLDays = 0
	if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), "raw_ttl_days:") {
		t.Errorf("Validate() = %v, want an error naming raw_ttl_days", err)
	}
	c = DefaultConfig()
	c.Backend, c.ClickHouse.Database, c.ClickHouse.Cluster = ClickHouse, "gp", "main"
	if p := c.MigrationParams(); p.DB != "gp" || p.Cluster != "main" || p.RawTTLDays != 90 {
		t.Errorf("clickhouse migration params %+v", p)
	}
	c.Backend = CHDB
	if p := c.MigrationParams(); p.DB != "gpupool" || p.Cluster != "" {
		t.Errorf("chdb migration params %+v", p)
	}
}
