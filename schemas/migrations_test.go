package schemas

import (
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
		if len(m.Statements) == 0 {
			t.Errorf("migration %d has no statements", m.Version)
		}
		for _, s := range m.Statements {
			if strings.Contains(s, "{{") || strings.Contains(s, "<no value>") {
				t.Errorf("migration %d: unrendered placeholder in %q", m.Version, s)
			}
			if !strings.Contains(s, "IF NOT EXISTS") {
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
