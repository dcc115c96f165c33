package clickhouse

import (
	"errors"
	"fmt"
	"testing"

	"github.com/gpupool/gpupool/store"
)

// TestAttackReadOnlyServer holds the read-only SQL path on a server store as
// store/chdb's attack tests hold it on the embedded one: the same checks
// (store.QueryReadOnly) in front of the server's own readonly=1, which every
// query of a read-only store carries, on the chDB endpoint or the server
// GPUPOOL_TEST_CLICKHOUSE names.
func TestAttackReadOnlyServer(t *testing.T) {
	rw := openServer(t)
	ctx := t.Context()
	if err := rw.Exec(ctx, "CREATE TABLE jobs (team String, gpus UInt32) ENGINE = MergeTree ORDER BY team", nil); err != nil {
		t.Fatal(err)
	}
	if err := rw.Exec(ctx, "INSERT INTO jobs VALUES ('vision', 8), ('nlp', 4)", nil); err != nil {
		t.Fatal(err)
	}
	cfg := rw.cfg
	cfg.ReadOnly = true
	ro, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ro.Close() })
	for _, sql := range []string{
		"SELECT file('/etc/passwd')",
		"SELECT * FROM file('/etc/passwd', 'LineAsString')",
		"SELECT * FROM url('http://127.0.0.1:1/', 'LineAsString')",
		"SELECT * FROM remote('127.0.0.1:1', system.one)",
		"SELECT * FROM executable('id', 'TSV', 'a String')",
		"SELECT * APPLY(file) FROM (SELECT '/etc/passwd' AS p)",
		"SELECT dictGet('d', 'a', 1)",
		"SELECT * FROM jobs INTO OUTFILE '/tmp/gpupool-ro-attack.csv'",
		"SELECT * FROM jobs FORMAT CSV",
		"SYSTEM FLUSH LOGS",
		"KILL QUERY WHERE 1",
		"SET readonly = 0",
		"SELECT 1 SETTINGS readonly = 0",
		"SELECT 1; KILL QUERY WHERE 1",
		"INSERT INTO jobs VALUES ('x', 1)",
		"SELECT * FROM system.stack_trace",
	} {
		if res, err := store.QueryReadOnly(ctx, ro, sql); !errors.Is(err, store.ErrRefused) {
			t.Errorf("QueryReadOnly(%q) = %v, %v; want a refusal", sql, res, err)
		}
	}
	for _, sql := range []string{"SELECT team, count() AS jobs, sum(gpus) AS gpus FROM jobs GROUP BY team", "SHOW TABLES", "DESCRIBE TABLE jobs"} {
		if _, err := store.QueryReadOnly(ctx, ro, sql); err != nil {
			t.Errorf("QueryReadOnly(%q): %v", sql, err)
		}
	}
	// The server holds readonly=1 behind the checks.
	res, err := ro.Query(ctx, "SELECT getSetting('readonly')", nil)
	if err != nil || fmt.Sprint(res.Rows) != "[[1]]" {
		t.Errorf("readonly on a read-only server store: %v, %v; want 1", res, err)
	}
	if _, err := ro.Query(ctx, "SELECT 1 SETTINGS readonly = 0", nil); err == nil {
		t.Error("the server let a read-only store's query set readonly = 0")
	}
}
