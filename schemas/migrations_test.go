package schemas

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMigrationsRender(t *testing.T) {
	ms, err := Migrations(MigrationParams{DB: "gp_test", RawTTLDays: 30})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) < 2 {
		t.Fatalf("got %d migrations, want at least 2", len(ms))
	}
	for i, m := range ms {
		if m.Version != i+1 {
			t.Errorf("migration %d has version %d: versions must be consecutive from 1", i, m.Version)
		}
		if len(m.Statements) == 0 && m.Released == "" {
			t.Errorf("migration %d has no statements", m.Version)
		}
		for _, s := range m.Statements {
			if strings.Contains(s, "{{") || strings.Contains(s, "<no value>") {
				t.Errorf("migration %d: unrendered placeholder in %q", m.Version, s)
			}
			// MODIFY QUERY sets a materialized view's query to a text, MODIFY
			// SETTING a table's setting to a value: the same when run twice.
			if strings.Contains(s, "MODIFY QUERY") || strings.Contains(s, "MODIFY SETTING") {
				continue
			}
			// CREATE OR REPLACE VIEW and MODIFY COLUMN (a codec set to a value) leave
			// the same objects when run twice; a backfill (INSERT … SELECT) skips the
			// rows it wrote before.
			backfill := strings.HasPrefix(strings.TrimSpace(s), "INSERT INTO") && strings.Contains(s, "GLOBAL NOT IN (SELECT DISTINCT")
			// DROP … IF EXISTS drops once and then does nothing.
			drop := strings.HasPrefix(strings.TrimSpace(s), "DROP ") && strings.Contains(s, " IF EXISTS ")
			if !drop && !strings.Contains(s, "IF NOT EXISTS") && !strings.HasPrefix(strings.TrimSpace(s), "CREATE OR REPLACE VIEW") && !strings.Contains(s, "MODIFY COLUMN IF EXISTS") && !backfill {
				t.Errorf("migration %d: statement is not idempotent: %.60q", m.Version, s)
			}
		}
	}
}

func TestMigrationParamsValidate(t *testing.T) {
	tests := []struct {
		name string
		p    MigrationParams
		want string
	}{
		{"injection in db", MigrationParams{DB: "x; DROP TABLE y", RawTTLDays: 1}, "database name"},
		{"bad cluster", MigrationParams{DB: "ok", Cluster: "a b", RawTTLDays: 1}, "cluster name"},
		{"zero ttl", MigrationParams{DB: "ok"}, "TTL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want error mentioning %q", err, tt.want)
			}
		})
	}
	if got := (MigrationParams{DB: "d", Cluster: "c1", RawTTLDays: 1}).OnCluster(); got != "ON CLUSTER `c1`" {
		t.Errorf("OnCluster() = %q", got)
	}
}

func TestSplitStatements(t *testing.T) {
	got := SplitStatements("-- comment;\nCREATE A;\n\n-- x\nCREATE B\n  (x);\nSELECT 1")
	want := []string{"CREATE A", "CREATE B\n  (x)", "SELECT 1"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// TestClusterDDLGolden pins the DDL of cluster mode (Replicated tables, _local
// names, Distributed tables over them), which no test here can run against a real
// cluster; `go test ./schemas -update` rewrites it.
func TestClusterDDLGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    MigrationParams
	}{
		{"single", MigrationParams{DB: "gpupool", RawTTLDays: 90}},
		{"cluster", MigrationParams{DB: "gpupool", Cluster: "gpu_fleet", RawTTLDays: 90}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms, err := Migrations(tc.p)
			if err != nil {
				t.Fatal(err)
			}
			var sb strings.Builder
			for _, m := range ms {
				for _, q := range m.Statements {
					sb.WriteString(q)
					sb.WriteString(";\n\n")
				}
			}
			vs, err := Views(tc.p)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range vs {
				sb.WriteString(v.Statement)
				sb.WriteString(";\n\n")
			}
			got := sb.String()
			golden := filepath.Join("testdata", "ddl_"+tc.name+".sql.golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test ./schemas -update)", err)
			}
			if got != string(want) {
				t.Errorf("DDL differs from %s", golden)
			}
			isCluster := tc.p.Cluster != ""
			for _, marker := range []string{"ReplicatedMergeTree", "_local", "ENGINE = Distributed", "ON CLUSTER `gpu_fleet`", "SETTINGS replicated_deduplication_window"} {
				if strings.Contains(got, marker) != isCluster {
					t.Errorf("%s DDL: contains %q = %v", tc.name, marker, !isCluster)
				}
			}
		})
	}
}

func TestViewQuery(t *testing.T) {
	p := MigrationParams{DB: "db1", RawTTLDays: 30}
	for view, want := range map[string][]string{
		// Created in 0003, dropped in 0021: the query of 0003.
		"gpu_hour_mv": {"toStartOfHour(ts)", "FROM db1.gpu_samples", "GROUP BY gpu_uuid, hour"},
		// Created in 0003, its query replaced in 0013, dropped in 0020: 0013's.
		"process_minute_mv": {"judged_samples", "FROM db1.process_samples", "GROUP BY gpu_uuid, job, minute"},
	} {
		q, err := ViewQuery(p, view)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(q, "SELECT") {
			t.Errorf("%s: query does not start with SELECT: %.60q", view, q)
		}
		for _, w := range want {
			if !strings.Contains(q, w) {
				t.Errorf("%s: query lacks %q:\n%s", view, w, q)
			}
		}
	}
	if _, err := ViewQuery(p, "gpu_minute"); err == nil || !strings.Contains(err.Error(), `"gpu_minute"`) {
		t.Errorf("a table that is no view: err = %v, want one naming it", err)
	}
}
