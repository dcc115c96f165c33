package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestMigratePrintGrants prints the roles' DDL for the configured database and
// cluster, with a reader per --team, and refuses a team name that is not one.
func TestMigratePrintGrants(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "gpupool.yaml")
	if err := writeFile(p, "store:\n  backend: clickhouse\n  clickhouse:\n    database: pool_db\n    cluster: fleet\n"); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	g := &Globals{Config: p, DataDir: dir}
	if err := (&MigrateCmd{PrintGrants: true, Team: []string{"vision"}, out: &out}).Run(g, t.Context()); err != nil {
		t.Fatal(err)
	}
	ddl := out.String()
	for _, want := range []string{
		"CREATE ROLE IF NOT EXISTS gpupool_ingest ON CLUSTER `fleet`;",
		"GRANT ON CLUSTER `fleet` INSERT ON pool_db.gpu_samples TO gpupool_ingest;",
		"GRANT ON CLUSTER `fleet` INSERT ON pool_db.gpu_samples_local TO gpupool_ingest;",
		"CREATE ROW POLICY IF NOT EXISTS gpupool_team_vision ON CLUSTER `fleet` ON pool_db.findings FOR SELECT USING team = 'vision'",
	} {
		if !strings.Contains(ddl, want) {
			t.Errorf("--print-grants lacks %q", want)
		}
	}
	err := (&MigrateCmd{PrintGrants: true, Team: []string{"x' OR 1=1 --"}, out: &out}).Run(g, t.Context())
	if err == nil || !strings.Contains(err.Error(), "team") {
		t.Fatalf("--team with a quote: %v, want a refusal", err)
	}
}
