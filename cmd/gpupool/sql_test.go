package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/backend"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

// sqlDataDir returns Globals on a data directory with a migrated embedded store
// and an admin token in auth/admin.token, as the demo leaves them.
func sqlDataDir(t *testing.T) (*Globals, string) {
	t.Helper()
	g := &Globals{DataDir: t.TempDir(), CHDBLib: chdbtest.LibPath(), LogLevel: "warn"}
	c, _, err := g.setup(nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := backend.OpenMigrated(t.Context(), c.Store, newLogger("error"))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	token := "gpa_admin_" + filepath.Base(g.DataDir)
	if err := os.MkdirAll(filepath.Join(g.DataDir, "auth"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(g.DataDir, "auth", "admin.token"), []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return g, token
}

// TestAttackSQLReadsAdminToken is the attack: gpupool sql, read-only,
// reading the admin token from the data directory (or writing a file) by any
// form. Every one is refused, and no output holds the token.
func TestAttackSQLReadsAdminToken(t *testing.T) {
	g, token := sqlDataDir(t)
	tok := filepath.Join(g.DataDir, "auth", "admin.token")
	out := filepath.Join(t.TempDir(), "out.csv")
	for _, q := range []string{
		"SELECT file('" + tok + "')",
		"SELECT * FROM file('" + tok + "', 'LineAsString')",
		"SELECT * FROM file('auth/admin.token', 'LineAsString')",
		"SELECT `file`('" + tok + "') AS t",
		"SELECT * APPLY(file) FROM (SELECT '" + tok + "' AS p)",
		"SELECT 1; SELECT file('" + tok + "')",
		"SELECT * FROM url('file://" + tok + "', 'LineAsString')",
		"SELECT * FROM executable('cat " + tok + "', 'LineAsString', 'line String')",
		"SELECT team FROM jobs INTO OUTFILE '" + out + "'",
		"KILL QUERY WHERE 1",
		"SYSTEM FLUSH LOGS",
		"SELECT 1 SETTINGS readonly = 0",
	} {
		var buf bytes.Buffer
		err := (&SQLCmd{Query: q, Format: "csv", out: &buf}).Run(g, t.Context())
		if !errors.Is(err, store.ErrRefused) {
			t.Errorf("gpupool sql %q: %v, want a refusal", q, err)
		}
		if strings.Contains(buf.String(), token) || (err != nil && strings.Contains(err.Error(), token)) {
			t.Errorf("gpupool sql %q returned the admin token", q)
		}
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("INTO OUTFILE wrote %s (err %v)", out, err)
	}
}

// TestSQLReadOnlyExamples runs the README's and docs/demo.md's sql examples, in
// each format, through the read-only path.
func TestSQLReadOnlyExamples(t *testing.T) {
	g, _ := sqlDataDir(t)
	for _, c := range []struct{ query, format, header string }{
		{"SELECT team, count() AS jobs, sum(gpus) AS gpus FROM jobs GROUP BY team", "table", "team"},
		{"SELECT * FROM jobs WHERE status = 'failed'", "csv", "job"},
		{"SELECT card, quantileExact(0.95)(sm_active) AS p95 FROM gpu_samples GROUP BY card", "json", ""},
		{"SELECT * FROM chargeback_monthly", "csv", "team"},
		{"SHOW TABLES", "csv", "name"},
	} {
		var buf bytes.Buffer
		if err := (&SQLCmd{Query: c.query, Format: c.format, out: &buf}).Run(g, t.Context()); err != nil {
			t.Errorf("gpupool sql --format %s %q: %v", c.format, c.query, err)
			continue
		}
		if !strings.Contains(buf.String(), c.header) {
			t.Errorf("gpupool sql --format %s %q: output %q lacks %q", c.format, c.query, buf.String(), c.header)
		}
	}
	// A write is refused before the engine sees it, and says what to do.
	err := (&SQLCmd{Query: "DROP TABLE gpu_samples", Format: "table", out: &bytes.Buffer{}}).Run(g, t.Context())
	if !errors.Is(err, store.ErrRefused) || !strings.Contains(err.Error(), "--write") {
		t.Errorf("gpupool sql DROP: %v", err)
	}
}
