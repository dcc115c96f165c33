// The attack tests of the read-only SQL path on the embedded engine. The file
// sorts after store_test.go: TestOpenMissingLibrary needs to run before any test
// loads the library.

package chdb_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

// readOnlyPair opens a writable store on a new database with a small jobs table,
// and a read-only store (readonly=1) on the same database, as gpupool sql opens it.
func readOnlyPair(t *testing.T) (rw, ro *chdb.Store) {
	t.Helper()
	rw = chdbtest.Open(t)
	ctx := t.Context()
	if err := rw.Exec(ctx, "CREATE TABLE jobs (team String, gpus UInt32, status String) ENGINE = MergeTree ORDER BY team", nil); err != nil {
		t.Fatal(err)
	}
	if err := rw.Exec(ctx, "INSERT INTO jobs VALUES ('vision', 8, 'failed'), ('nlp', 4, 'done')", nil); err != nil {
		t.Fatal(err)
	}
	cfg := chdbtest.Config(t)
	cfg.Database, cfg.ReadOnly = rw.Database(), true
	ro, err := chdb.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ro.Close() })
	return rw, ro
}

// secretFile writes a token into the data directory, where gpupool keeps
// auth/admin.token, and returns its path and content.
func secretFile(t *testing.T, rw *chdb.Store) (path, secret string) {
	t.Helper()
	dir := filepath.Join(rw.Path(), "auth-"+rw.Database())
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	secret = "gpa_secret_" + rw.Database()
	path = filepath.Join(dir, "admin.token")
	if err := os.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, secret
}

// attack is one statement the read-only path must refuse. what is in the
// lexer check's refusal; parsed says the engine's parser check (which sees the
// statement as the engine will run it) refuses it on its own too.
type attack struct {
	sql    string
	what   string
	parsed bool
}

// refuseAll checks that each layer refuses each attack and that QueryReadOnly
// returns a refusal and no rows; secret, when set, must be in no error either.
func refuseAll(t *testing.T, ro *chdb.Store, attacks []attack, secret string) {
	t.Helper()
	for _, a := range attacks {
		err := store.CheckReadOnly(a.sql)
		var re *store.RefusedError
		if !errors.As(err, &re) || !errors.Is(err, store.ErrRefused) || !strings.Contains(err.Error(), a.what) {
			t.Errorf("CheckReadOnly(%q) = %v, want a refusal naming %q", a.sql, err, a.what)
		}
		if a.parsed {
			if err := store.CheckReadOnlyParsed(t.Context(), ro, a.sql); !errors.Is(err, store.ErrRefused) {
				t.Errorf("CheckReadOnlyParsed(%q) = %v, want a refusal", a.sql, err)
			}
		}
		res, err := store.QueryReadOnly(t.Context(), ro, a.sql)
		if !errors.Is(err, store.ErrRefused) || res != nil {
			t.Errorf("QueryReadOnly(%q) = %v, %v; want a refusal and no result", a.sql, res, err)
		}
		if secret != "" && ((res != nil && strings.Contains(fmt.Sprint(res.Rows), secret)) || (err != nil && strings.Contains(err.Error(), secret))) {
			t.Errorf("QueryReadOnly(%q) returned the secret", a.sql)
		}
	}
}

func TestAttackReadOnlyTableFunctions(t *testing.T) {
	rw, ro := readOnlyPair(t)
	path, secret := secretFile(t, rw)
	var attacks []attack
	for _, f := range []string{
		"file('%s', 'LineAsString')", "fileCluster('default', '%s', 'LineAsString')", "url('http://127.0.0.1:1/%s', 'LineAsString')",
		"urlCluster('default', 'http://127.0.0.1:1/%s')", "s3('http://127.0.0.1:1/b/%s', 'LineAsString')",
		"s3Cluster('default', 'http://127.0.0.1:1/%s')", "hdfs('hdfs://127.0.0.1:1/%s', 'LineAsString')",
		"azureBlobStorage('DefaultEndpointsProtocol=http', 'c', '%s')", "icebergLocal('%s')", "deltaLakeLocal('%s')",
		"remote('127.0.0.1:1', system.one, '%s')", "remoteSecure('127.0.0.1:1', system.one, '%s')",
		"cluster('default', system.one, '%s')", "executable('cat %s', 'TSV', 'a String')", "input('a String /* %s */')",
		"mysql('127.0.0.1:1', 'd', 't', 'u', '%s')", "postgresql('127.0.0.1:1', 'd', 't', 'u', '%s')",
		"jdbc('jdbc:x', 'd', '%s')", "odbc('DSN=x', 'd', '%s')", "sqlite('%s', 't')", "mongodb('127.0.0.1:1', 'd', 'c', 'u', '%s')",
		"redis('127.0.0.1:1', 'k', 'k String', 0, '%s')", "filesystem('%s')", "dictionary('%s')",
		"merge('system', '%s')", "loop('system', '%s')", "arrowstream('%s')",
	} {
		call := fmt.Sprintf(f, path)
		name, _, _ := strings.Cut(call, "(")
		attacks = append(attacks,
			attack{"SELECT * FROM " + call, "function " + name, true},
			attack{"SELECT count() FROM jobs WHERE team IN (SELECT * FROM " + call + ")", "function " + name, true},
			attack{"DESCRIBE TABLE " + call, "function " + name, true})
	}
	refuseAll(t, ro, attacks, secret)
}

func TestAttackReadOnlyFileFunctions(t *testing.T) {
	rw, ro := readOnlyPair(t)
	path, secret := secretFile(t, rw)
	q := "'" + path + "'"
	refuseAll(t, ro, []attack{
		{"SELECT file(" + q + ")", "function file", true},
		{"SELECT file(" + q + ", 'raw')", "function file", true},
		{"WITH t AS (SELECT file(" + q + ") AS s) SELECT * FROM t", "function file", true},
		{"SELECT 1 UNION ALL SELECT length(file(" + q + "))", "function file", true},
		{"SELECT arrayMap(p -> file(p), [" + q + "])", "function file", true},
		{"SELECT * FROM view(SELECT file(" + q + "))", "function file", true},
		{"SELECT * APPLY(file) FROM (SELECT " + q + " AS p)", "function file (in APPLY)", false},
		{"SELECT * APPLY file FROM (SELECT " + q + " AS p)", "function file (in APPLY)", false},
		{"SELECT COLUMNS('p') APPLY(file) FROM (SELECT " + q + " AS p)", "function file (in APPLY)", false},
		{"SELECT dictGet('d', 'a', 1)", "function dictGet", true},
		{"SELECT dictGetStringOrDefault('d', 'a', 1, '')", "function dictGetStringOrDefault", true},
		{"SELECT dictHas('d', 1)", "function dictHas", true},
		{"SELECT filesystemAvailable()", "function filesystemAvailable", true},
		{"SELECT filesystemCapacity()", "function filesystemCapacity", true},
		{"SELECT addressToSymbol(toUInt64(1))", "function addressToSymbol", true},
		{"SELECT addressToLine(toUInt64(1))", "function addressToLine", true},
		{"SELECT demangle('_Z1fv')", "function demangle", true},
		{"SELECT catboostEvaluate(" + q + ", 1)", "function catboostEvaluate", true},
		{"SELECT naiveBayesClassifier('m', 'x')", "function naiveBayesClassifier", true},
		{"SELECT showCertificate()", "function showCertificate", true},
	}, secret)
}

func TestAttackReadOnlyOutputClauses(t *testing.T) {
	_, ro := readOnlyPair(t)
	out := filepath.Join(t.TempDir(), "out.csv")
	q := "'" + out + "'"
	refuseAll(t, ro, []attack{
		{"SELECT * FROM jobs INTO OUTFILE " + q, "INTO OUTFILE", true},
		{"SELECT * FROM jobs INTO OUTFILE " + q + " FORMAT CSV", "INTO OUTFILE", true},
		{"SELECT * FROM jobs INTO OUTFILE " + q + " AND STDOUT", "INTO OUTFILE", true},
		{"SELECT * FROM jobs INTO OUTFILE " + q + " TRUNCATE COMPRESSION 'gzip'", "INTO OUTFILE", true},
		{"SHOW TABLES INTO OUTFILE " + q, "INTO OUTFILE", false},
		{"SELECT * FROM jobs FORMAT CSV", "FORMAT", true},
		{"SELECT * FROM jobs FORMAT Protobuf", "FORMAT", true},
	}, "")
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists after the refused statements (err %v)", out, err)
	}
}

func TestAttackReadOnlySystemStatements(t *testing.T) {
	_, ro := readOnlyPair(t)
	refuseAll(t, ro, []attack{
		{"SYSTEM FLUSH LOGS", "SYSTEM", true},
		{"SYSTEM DROP MARK CACHE", "SYSTEM", true},
		{"SYSTEM SHUTDOWN", "SYSTEM", true},
		{"SYSTEM STOP MERGES", "SYSTEM", true},
		{"system reload config", "SYSTEM", true},
		{"SELECT * FROM system.stack_trace", "system.stack_trace", true},
		{"SELECT * FROM `system`.`certificates`", "system.certificates", true},
		{"SELECT count() FROM system.symbols", "system.symbols", true},
		{"SELECT * FROM system.detached_parts", "system.detached_parts", true},
	}, "")
}

func TestAttackReadOnlyKill(t *testing.T) {
	_, ro := readOnlyPair(t)
	refuseAll(t, ro, []attack{
		{"KILL QUERY WHERE 1", "KILL", true},
		{"KILL QUERY WHERE user = currentUser() SYNC", "KILL", true},
		{"KILL MUTATION WHERE 1", "KILL", true},
		{"kill query where query_id != ''", "KILL", true},
	}, "")
}

func TestAttackReadOnlySettingsOverrides(t *testing.T) {
	_, ro := readOnlyPair(t)
	refuseAll(t, ro, []attack{
		{"SET readonly = 0", "SET", true},
		{"SET allow_introspection_functions = 1", "SET", true},
		// The engine applies a SELECT's SETTINGS as it parses it and refuses
		// them there (readonly=1), before the parsed check could.
		{"SELECT 1 SETTINGS readonly = 0", "SETTINGS", false},
		{"SELECT count() FROM jobs SETTINGS max_threads = 1", "SETTINGS", false},
		{"SELECT * FROM (SELECT 1 SETTINGS readonly = 2)", "SETTINGS", true},
		{"EXPLAIN header = 1 SELECT 1", "EXPLAIN of anything", true},
	}, "")
	// Behind the checks the engine holds too: the connection is readonly=1,
	// with introspection functions off, and refuses a change of either.
	res, err := ro.Query(t.Context(), "SELECT getSetting('readonly'), getSetting('allow_introspection_functions')", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(res.Rows); got != "[[1 false]]" {
		t.Errorf("readonly, allow_introspection_functions = %s, want [[1 false]]", got)
	}
	for _, q := range []string{"SET readonly = 0", "SELECT 1 SETTINGS readonly = 0", "SET allow_introspection_functions = 1"} {
		if _, err := ro.Query(t.Context(), q, nil); err == nil || !strings.Contains(err.Error(), "READONLY") {
			t.Errorf("the engine ran %q on a read-only connection: %v", q, err)
		}
	}
}

func TestAttackReadOnlyWrites(t *testing.T) {
	_, ro := readOnlyPair(t)
	out := "'" + filepath.Join(t.TempDir(), "w.csv") + "'"
	refuseAll(t, ro, []attack{
		{"INSERT INTO jobs VALUES ('x', 1, 'done')", "INSERT", true},
		{"INSERT INTO FUNCTION file(" + out + ", 'CSV', 'a String') SELECT team FROM jobs", "INSERT", true},
		{"CREATE TABLE x (a Int8) ENGINE = Memory", "CREATE", true},
		{"CREATE FUNCTION f AS () -> 1", "CREATE", true},
		{"CREATE TEMPORARY TABLE x (a Int8)", "CREATE", true},
		{"DROP TABLE jobs", "DROP", true},
		{"TRUNCATE TABLE jobs", "TRUNCATE", true},
		{"ALTER TABLE jobs DELETE WHERE 1", "ALTER", true},
		{"OPTIMIZE TABLE jobs FINAL", "OPTIMIZE", true},
		{"RENAME TABLE jobs TO j", "RENAME", true},
		{"ATTACH TABLE x FROM '/tmp' (a Int8) ENGINE = Memory", "ATTACH", true},
		{"BACKUP TABLE jobs TO File(" + out + ")", "BACKUP", true},
		{"GRANT SELECT ON *.* TO default", "GRANT", true},
		{"USE system", "USE", true},
	}, "")
}

func TestAttackReadOnlyMultiStatement(t *testing.T) {
	rw, ro := readOnlyPair(t)
	path, secret := secretFile(t, rw)
	refuseAll(t, ro, []attack{
		{"SELECT 1; SELECT file('" + path + "')", "second statement", false},
		{"SELECT 1;KILL QUERY WHERE 1", "second statement", false},
		{"SELECT 1; -- c\nSYSTEM SHUTDOWN", "second statement", false},
		{"SELECT ';'; SELECT file('" + path + "')", "second statement", false},
		{"SELECT 1 PARALLEL WITH KILL QUERY WHERE 1", "PARALLEL WITH", true},
	}, secret)
}

// TestAttackReadOnlyEvasion: comments, quoting, case and spacing do not hide a
// call, and what the check cannot read as the engine does is refused.
func TestAttackReadOnlyEvasion(t *testing.T) {
	rw, ro := readOnlyPair(t)
	path, secret := secretFile(t, rw)
	q := "'" + path + "'"
	refuseAll(t, ro, []attack{
		{"SELECT `file`(" + q + ")", "function file", true},
		{`SELECT "file"(` + q + `)`, "function file", true},
		{"SELECT file/**/(" + q + ")", "function file", true},
		{"SELECT file /* ) */ (" + q + ")", "function file", true},
		{"SELECT file -- x\n(" + q + ")", "function file", true},
		{"SELECT file #! x\n(" + q + ")", "function file", true},
		{"SELECT file\t\f\v(" + q + ")", "function file", true},
		{"/* SELECT */ SeLeCt FILE(" + q + ")", "function FILE", false},
		{"sElEcT * fRoM S3('http://127.0.0.1:1/x')", "function S3", false},
		{"SELECT '*/' AS a, file(" + q + ") /* ' */", "function file", true},
		{"SELECT 'a\\\\', file(" + q + ")", "function file", true},
		{"SELECT 'a''', file(" + q + ")", "function file", true},
		{"SELECT /* /* */ file(" + q + ") */ 1 FROM jobs /*", "never closed", false},
		{"SELECT `\\x66ile`(" + q + ")", "backslash escape", true},
		{"SELECT 1file(" + q + ")", "neither a number nor a name", false},
		{"SELECT file\u00a0(" + q + ")", "character", false},
		{"SELECT file\u2028(" + q + ")", "character", false},
		{"SELECT $$x$$ AS a, file(" + q + ")", "$", true},
		{"SELECT 1 #x\n, file(" + q + ")", "# that does not start", false},
	}, secret)
}

// TestAttackReadOnlyUserDefinedFunction: a function someone with write access
// defined runs what the statement does not show; the parsed check refuses it.
func TestAttackReadOnlyUserDefinedFunction(t *testing.T) {
	rw, ro := readOnlyPair(t)
	path, secret := secretFile(t, rw)
	name := "gp_udf_" + rw.Database()
	if err := rw.Exec(t.Context(), "CREATE FUNCTION "+name+" AS (p) -> file(p)", nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rw.Exec(t.Context(), "DROP FUNCTION IF EXISTS "+name, nil) })
	sql := "SELECT " + name + "('" + path + "')"
	if err := store.CheckReadOnly(sql); err != nil {
		t.Fatalf("the lexer check refused %q (it cannot see a function's body): %v", sql, err)
	}
	res, err := store.QueryReadOnly(t.Context(), ro, sql)
	if !errors.Is(err, store.ErrRefused) || !strings.Contains(err.Error(), "user-defined function "+name) {
		t.Errorf("QueryReadOnly(%q) = %v, %v; want the user-defined function refused", sql, res, err)
	}
	if res != nil && strings.Contains(fmt.Sprint(res.Rows), secret) {
		t.Errorf("QueryReadOnly(%q) returned the secret", sql)
	}
}

// TestAttackReadOnlyReadsNoFile: the admin token in the data directory (the
// issue's attack) is out of reach of every form, though the engine alone reads
// it on a readonly=1 connection.
func TestAttackReadOnlyReadsNoFile(t *testing.T) {
	rw, ro := readOnlyPair(t)
	path, secret := secretFile(t, rw)
	// The control: readonly=1 alone returns the token to file().
	res, err := ro.Query(t.Context(), "SELECT file('"+path+"')", nil)
	if err != nil || !strings.Contains(fmt.Sprint(res.Rows), secret) {
		t.Fatalf("control: the engine's file() on %s = %v, %v; the attack below would prove nothing", path, res, err)
	}
	for _, sql := range []string{
		"SELECT file('" + path + "')",
		"SELECT * FROM file('" + path + "', 'LineAsString')",
		"SELECT * APPLY(file) FROM (SELECT '" + path + "' AS p)",
		"SELECT `file`('" + path + "')",
		"SELECT 1; SELECT file('" + path + "')",
	} {
		res, err := store.QueryReadOnly(t.Context(), ro, sql)
		if !errors.Is(err, store.ErrRefused) {
			t.Errorf("QueryReadOnly(%q) = %v, want a refusal", sql, err)
		}
		if res != nil && strings.Contains(fmt.Sprint(res.Rows), secret) {
			t.Errorf("QueryReadOnly(%q) returned the admin token", sql)
		}
	}
}

// TestReadOnlyAllowsReads runs the reads of the README, docs/demo.md and the
// finance views on the migrated schema through the read-only path.
func TestReadOnlyAllowsReads(t *testing.T) {
	rw := chdbtest.Open(t)
	if _, err := store.Migrate(t.Context(), rw, schemas.MigrationParams{DB: rw.Database(), RawTTLDays: 3650}); err != nil {
		t.Fatal(err)
	}
	cfg := chdbtest.Config(t)
	cfg.Database, cfg.ReadOnly = rw.Database(), true
	ro, err := chdb.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ro.Close() })
	for _, sql := range []string{
		"SELECT team, count() AS jobs, sum(gpus) AS gpus FROM jobs GROUP BY team",
		"SELECT * FROM jobs WHERE status = 'failed'",
		"SELECT card, quantileExact(0.95)(sm_active) AS p95 FROM gpu_samples GROUP BY card",
		"SELECT countIf(kind IN ('idle', 'zombie')) > 0 AS found FROM findings",
		"SELECT * FROM chargeback_daily", "SELECT * FROM chargeback_monthly", "SELECT * FROM idle_cost",
		"SELECT * FROM queue_wait", "SELECT * FROM price_book_current", "SELECT * FROM capacity",
		"SHOW TABLES", "DESCRIBE TABLE jobs", "EXISTS TABLE jobs", "SHOW CREATE TABLE jobs",
		"EXPLAIN SELECT count() FROM jobs", "EXPLAIN AST SELECT 1",
		"WITH t AS (SELECT team FROM jobs) SELECT count() FROM t",
		"SELECT number FROM numbers(3)", "SELECT format('{}-{}', 1, 2)",
		"SELECT name FROM system.tables WHERE database = currentDatabase() LIMIT 1",
		"SELECT 'file(''/etc/passwd'') INTO OUTFILE' AS s -- file('/etc/passwd')",
	} {
		if _, err := store.QueryReadOnly(t.Context(), ro, sql); err != nil {
			t.Errorf("QueryReadOnly(%q): %v", sql, err)
		}
	}
}

// TestMigratedSchemaTouchesNoFile: the read-only checks hold the statement, not
// the objects it reads, so the schema gpupool creates must hold nothing that
// touches a file, the network or a process: no table of such an engine, and no
// view whose query the read-only path would refuse.
func TestMigratedSchemaTouchesNoFile(t *testing.T) {
	s := chdbtest.Open(t)
	if _, err := store.Migrate(t.Context(), s, schemas.MigrationParams{DB: s.Database(), RawTTLDays: 3650}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Query(t.Context(), "SELECT name, engine, as_select FROM system.tables WHERE database = currentDatabase()", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) < 10 {
		t.Fatalf("the migrated schema has %d objects", len(res.Rows))
	}
	denied := map[string]bool{"File": true, "URL": true, "S3": true, "HDFS": true, "Executable": true, "ExecutablePool": true,
		"MySQL": true, "PostgreSQL": true, "ODBC": true, "JDBC": true, "MongoDB": true, "Redis": true, "SQLite": true,
		"Dictionary": true, "Merge": true, "Distributed": true, "AzureBlobStorage": true, "FileLog": true, "Kafka": true}
	views := 0
	for _, r := range res.Rows {
		name, engine, body := fmt.Sprint(r[0]), fmt.Sprint(r[1]), fmt.Sprint(r[2])
		if denied[engine] {
			t.Errorf("%s: engine %s reads outside the database", name, engine)
		}
		if body != "" {
			views++
			if err := store.CheckReadOnly(body); err != nil {
				t.Errorf("%s: its query would be refused on the read-only path: %v", name, err)
			}
		}
	}
	if views == 0 {
		t.Error("no view's query was checked: system.tables.as_select is empty")
	}
}
