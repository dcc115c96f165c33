package main

import (
	"bytes"
	"os"
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

// TestMigratePrintCluster checks `migrate --print --cluster NAME` prints the cluster
// DDL: ReplicatedMergeTree local tables, Distributed tables over them, every
// statement ON CLUSTER, the rollups' materialized views reading the local tables,
// exactly as schemas renders it for that cluster (schemas/testdata/ddl_cluster.sql.golden
// is its golden file).
func TestMigratePrintCluster(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	g := &Globals{DataDir: dir}
	if err := (&MigrateCmd{Print: true, Cluster: "gpu_fleet", out: &out}).Run(g, t.Context()); err != nil {
		t.Fatal(err)
	}
	ddl := out.String()
	golden, err := os.ReadFile("../../schemas/testdata/ddl_cluster.sql.golden")
	if err != nil {
		t.Fatal(err)
	}
	var stmts []string
	for _, line := range strings.Split(ddl, "\n") {
		if !strings.HasPrefix(line, "-- migration ") {
			stmts = append(stmts, line)
		}
	}
	if got := strings.Join(stmts, "\n"); normalizeDDL(got) != normalizeDDL(string(golden)) {
		t.Errorf("migrate --print --cluster gpu_fleet differs from schemas/testdata/ddl_cluster.sql.golden")
	}
	for _, want := range []string{
		"CREATE DATABASE IF NOT EXISTS gpupool ON CLUSTER `gpu_fleet`",
		"CREATE TABLE IF NOT EXISTS gpupool.gpu_samples_local ON CLUSTER `gpu_fleet`",
		"ReplicatedMergeTree(",
		"ENGINE = Distributed(",
	} {
		if !strings.Contains(ddl, want) {
			t.Errorf("--print --cluster lacks %q", want)
		}
	}
	for _, stmt := range strings.Split(ddl, ";\n") {
		s := strings.TrimSpace(stmt)
		if strings.HasPrefix(s, "--") {
			_, s, _ = strings.Cut(s, "\n")
		}
		s = strings.TrimSpace(s)
		if strings.HasPrefix(s, "INSERT INTO ") {
			// A backfill runs once, through the Distributed table, which spreads
			// the rows to the shards (INSERT has no ON CLUSTER).
			if tbl, _, _ := strings.Cut(strings.TrimPrefix(s, "INSERT INTO "), "\n"); strings.Contains(tbl, "_local") {
				t.Errorf("a backfill inserts into a shard's local table: %.120s", s)
			}
			continue
		}
		if s != "" && !strings.Contains(s, "ON CLUSTER") {
			t.Errorf("statement without ON CLUSTER: %.120s", s)
		}
		if strings.Contains(s, "MATERIALIZED VIEW") && strings.Contains(s, " FROM gpupool.gpu_samples\n") {
			t.Errorf("a materialized view reads the Distributed table, not the local one: %.200s", s)
		}
	}
}

// normalizeDDL drops blank lines and trailing spaces, so the golden file's layout
// and the command's (a blank line after each statement) compare equal.
func normalizeDDL(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimRight(l, " \t"); l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
