package store

import (
	"errors"
	"strings"
	"testing"
)

// TestCheckReadOnlyAllows keeps the reads of the README, docs/demo.md and
// docs/finance.md, and statements that only mention denied words inside strings,
// comments and quoted names, runnable.
func TestCheckReadOnlyAllows(t *testing.T) {
	for _, sql := range []string{
		"SELECT team, count() AS jobs, sum(gpus) AS gpus FROM jobs GROUP BY team",
		"SELECT * FROM jobs WHERE status = 'failed'",
		"SELECT card, quantileExact(0.95)(sm_active) AS p95 FROM gpu_samples GROUP BY card",
		"SELECT * FROM chargeback_monthly ORDER BY month, team;",
		"  select 1 ;  -- trailing comment",
		"WITH t AS (SELECT team FROM jobs) SELECT count() FROM t",
		"(SELECT 1) UNION ALL (SELECT 2)",
		"SHOW TABLES", "SHOW CREATE TABLE jobs", "SHOW SETTINGS LIKE 'max%'", "SHOW CHANGED SETTINGS",
		"DESCRIBE TABLE jobs", "DESC jobs", "EXISTS TABLE jobs",
		"EXPLAIN SELECT 1", "EXPLAIN AST SELECT 1", "EXPLAIN QUERY TREE SELECT 1", "EXPLAIN PIPELINE (SELECT 1)",
		"SELECT 'file(''/etc/passwd''); INTO OUTFILE x SETTINGS' AS s /* file('/x') */ # file('y')",
		"SELECT `file` FROM jobs", `SELECT "format", "into" FROM jobs`, "SELECT format('{}-{}', 1, 2)",
		"SELECT * FROM numbers(3)", "SELECT * FROM values('a Int8', 1, 2)", "SELECT * FROM view(SELECT 1)",
		"SELECT 1e-3, 0x1F, 0b101, .5, 1_000, t.1 FROM (SELECT tuple(1) AS t)",
		"SELECT * APPLY(toString) FROM jobs", "SELECT name FROM system.tables WHERE database = currentDatabase()",
		"SELECT ts FROM gpu_samples WHERE ts >= now() - INTERVAL 1 HOUR AND x::String != ''",
		"SELECT 'a\\'b', 'c''d', \"we\"\"ird\"",
	} {
		if err := CheckReadOnly(sql); err != nil {
			t.Errorf("CheckReadOnly(%q) = %v, want nil", sql, err)
		}
	}
}

// TestCheckReadOnlyRefuses holds each rule of the lexer check; the attack tests
// in store/chdb run the same forms against the engine.
func TestCheckReadOnlyRefuses(t *testing.T) {
	tests := []struct{ sql, what string }{
		{"", "empty"},
		{" -- only a comment", "empty"},
		{"INSERT INTO jobs SELECT * FROM jobs", "INSERT"},
		{"DROP TABLE jobs", "DROP"},
		{"KILL QUERY WHERE 1", "KILL"},
		{"SYSTEM FLUSH LOGS", "SYSTEM"},
		{"SET readonly = 0", "SET"},
		{"USE system", "USE"},
		{"(KILL QUERY WHERE 1)", "KILL"},
		{"(SHOW TABLES)", "SHOW"},
		{"EXPLAIN KILL QUERY WHERE 1", "EXPLAIN of anything"},
		{"EXPLAIN header = 1 SELECT 1", "EXPLAIN of anything"},
		{"SELECT 1; SELECT 2", "second statement"},
		{"SELECT 1;;", "second statement"},
		{"SELECT 1 PARALLEL WITH SELECT 2", "PARALLEL WITH"},
		{"SELECT file('/etc/passwd')", "function file"},
		{"SELECT `file`('/etc/passwd')", "function file"},
		{`SELECT "file"('/etc/passwd')`, "function file"},
		{"SELECT file /* x */ ('/etc/passwd')", "function file"},
		{"SELECT file -- x\n('/etc/passwd')", "function file"},
		{"SELECT FiLe('/etc/passwd')", "function FiLe"},
		{"SELECT * FROM s3('http://x')", "function s3"},
		{"SELECT * FROM remoteSecure('h', system.one)", "function remoteSecure"},
		{"SELECT * FROM icebergLocal('/x')", "function icebergLocal"},
		{"SELECT dictGetString('d', 'a', 1)", "function dictGetString"},
		{"SELECT addressToSymbol(1)", "function addressToSymbol"},
		{"SELECT * APPLY(file) FROM (SELECT '/x' AS p)", "function file (in APPLY)"},
		{"SELECT * APPLY file FROM (SELECT '/x' AS p)", "function file (in APPLY)"},
		{"SELECT * FROM merge('system', '.*')", "function merge"},
		{"SELECT * FROM system.stack_trace", "system.stack_trace"},
		{"SELECT * FROM `system`.`certificates`", "system.certificates"},
		{"SELECT 1 INTO OUTFILE '/tmp/x'", "INTO OUTFILE"},
		{"SELECT 1 FORMAT CSV", "FORMAT"},
		{"SELECT 1 SETTINGS readonly = 0", "SETTINGS"},
		{"SELECT `\\x66ile`('/etc/passwd')", "backslash escape"},
		{"SELECT $$x$$", "$"},
		{"SELECT a$b FROM t", "$"},
		{"SELECT 1file('/etc/passwd')", "neither a number nor a name"},
		{"SELECT file\u00a0('/etc/passwd')", "character"},
		{"SELECT 1 #x", "# that does not start"},
		{"SELECT 'open", "never closed"},
		{"SELECT `open", "never closed"},
		{"SELECT 1 /* /* */ file('/x')", "never closed"},
	}
	for _, tt := range tests {
		err := CheckReadOnly(tt.sql)
		var re *RefusedError
		if !errors.Is(err, ErrRefused) || !errors.As(err, &re) {
			t.Errorf("CheckReadOnly(%q) = %v, want a RefusedError", tt.sql, err)
			continue
		}
		if !strings.Contains(err.Error(), tt.what) || re.Why == "" {
			t.Errorf("CheckReadOnly(%q) = %q, want it to name %q and why", tt.sql, err, tt.what)
		}
	}
}

// TestCheckASTRules holds the parsed check's rules on EXPLAIN AST lines as the
// engine prints them (store/chdb's attack tests run them on the engine).
func TestCheckASTRules(t *testing.T) {
	sel := func(body ...string) []string {
		return append([]string{"SelectWithUnionQuery (children 1)", " ExpressionList (children 1)", "  SelectQuery (children 2)"}, body...)
	}
	tests := []struct {
		name  string
		lines []string
		what  string // "" allows
	}{
		{"a select", sel("   ExpressionList (children 1)", "    Function count (children 1)"), ""},
		{"numbers", sel("   TablesInSelectQuery (children 1)", "    TablesInSelectQueryElement (children 1)", "     TableExpression (children 1)", "      Function numbers (children 1)"), ""},
		{"kill", []string{"KillQueryQuery Literal_UInt64_1 ASYNC (children 1)", " Literal UInt64_1"}, "KillQueryQuery"},
		{"system", []string{"SYSTEM query"}, "SYSTEM"},
		{"parallel", []string{"ParallelWithQuery 2 SelectWithUnionQuery (children 2)"}, "ParallelWithQuery"},
		{"file", sel("   ExpressionList (children 1)", "    Function file (alias f) (children 1)"), "function file"},
		{"unknown table function", sel("     TableExpression (children 1)", "      Function newThing (children 1)"), "table function newThing"},
		{"settings", sel("   Set"), "SETTINGS"},
		{"outfile", []string{"SelectWithUnionQuery (children 2)", " ExpressionList (children 1)", " Literal 'x'"}, "output clause"},
		{"format", []string{"SelectWithUnionQuery (children 2)", " ExpressionList (children 1)", " Identifier CSV"}, "output clause"},
		{"system table", sel("      TableIdentifier system.stack_trace"), "system.stack_trace"},
		{"nothing", nil, "nothing"},
	}
	for _, tt := range tests {
		_, err := checkAST(tt.lines)
		switch {
		case tt.what == "" && err != nil:
			t.Errorf("%s: checkAST = %v, want nil", tt.name, err)
		case tt.what != "" && (!errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tt.what)):
			t.Errorf("%s: checkAST = %v, want a refusal naming %q", tt.name, err, tt.what)
		}
	}
}

// FuzzCheckReadOnly: the checker never panics, and what it allows lexes back to
// the same tokens with a comment or a space added at either end (it depends on
// nothing outside the statement).
func FuzzCheckReadOnly(f *testing.F) {
	for _, s := range []string{
		"SELECT team, count() FROM jobs GROUP BY team", "SELECT file('/x')", "SELECT 1 /* /* */ */ -- x\n",
		"SELECT 'a\\'b' || \"c\"\"d\" || `e`", "SELECT * APPLY(file) FROM t", "EXPLAIN AST SELECT 1",
		"SELECT 1e-3, 0x1F, .5, t.1", "SELECT 1 INTO OUTFILE 'x'", "SHOW SETTINGS LIKE 'x'", "#! x\nSELECT 1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		err := CheckReadOnly(sql)
		if err != nil && !errors.Is(err, ErrRefused) {
			t.Fatalf("CheckReadOnly(%q) = %v, not a refusal", sql, err)
		}
		if err == nil {
			if err2 := CheckReadOnly("/* c */ " + sql + "\n"); err2 != nil {
				t.Fatalf("CheckReadOnly(%q) allowed, with a comment before it refused: %v", sql, err2)
			}
		}
	})
}

// FuzzCheckAST: the parsed check reads whatever lines the engine returns without
// panicking, and refuses nothing but with a RefusedError.
func FuzzCheckAST(f *testing.F) {
	f.Add("SelectWithUnionQuery (children 1)\n ExpressionList (children 1)\n  Function file (alias f) (children 1)")
	f.Add("KillQueryQuery Literal_UInt64_1 ASYNC (children 1)\n Literal UInt64_1")
	f.Add("     TableExpression (children 1)\n      Function numbers\n TableIdentifier system.stack_trace\nSet")
	f.Fuzz(func(t *testing.T, out string) {
		if _, err := checkAST(strings.Split(out, "\n")); err != nil && !errors.Is(err, ErrRefused) {
			t.Fatalf("checkAST(%q) = %v, not a refusal", out, err)
		}
	})
}
