package store

import (
	"context"
	"fmt"
	"strings"
)

// QueryReadOnly runs sql on st if it passes CheckReadOnly and then
// CheckReadOnlyParsed: the read-only SQL path of gpupool sql. st should be open
// read-only (readonly=1), which the engine enforces for every statement; these
// checks refuse what readonly=1 lets through (file(), INTO OUTFILE, KILL).
func QueryReadOnly(ctx context.Context, st Store, sql string) (*Result, error) {
	if err := CheckReadOnly(sql); err != nil {
		return nil, err
	}
	if err := CheckReadOnlyParsed(ctx, st, sql); err != nil {
		return nil, err
	}
	return st.Query(ctx, sql, nil)
}

// readRoots are the statements, as EXPLAIN AST names its root node, that the
// read-only path runs.
var readRoots = []string{"SelectWithUnionQuery", "SelectIntersectExceptQuery", "Show", "Describe", "Exists", "Explain"}

// CheckReadOnlyParsed has the engine parse sql (EXPLAIN AST, which runs nothing)
// and refuses, with a RefusedError, a statement that is not a read, a SETTINGS
// clause, an output clause, a table function other than those that only make
// rows from their arguments, a function CheckReadOnly denies, a user-defined
// function (its body or program is out of sight), and a denied system table.
// It checks what the engine will run, not what a lexer read: the second line
// behind CheckReadOnly, which must pass first (sql is one statement).
func CheckReadOnlyParsed(ctx context.Context, st Store, sql string) error {
	res, err := st.Query(ctx, "EXPLAIN AST "+sql, nil)
	if err != nil {
		return fmt.Errorf("read-only SQL: parse %s: %w", Abbreviate(sql), err)
	}
	lines := make([]string, 0, len(res.Rows))
	for _, r := range res.Rows {
		if len(r) == 1 {
			if s, ok := r[0].(string); ok {
				lines = append(lines, s)
			}
		}
	}
	funcs, err := checkAST(lines)
	if err != nil {
		return err
	}
	return checkUserDefined(ctx, st, funcs)
}

// checkAST applies the rules to EXPLAIN AST's lines (one node a line, indented
// a space per level) and returns the functions called. Every rule refuses on
// what a line holds, never on what is missing, so a name or alias that forges
// a line (an alias with a newline) can only add refusals.
func checkAST(lines []string) ([]string, error) {
	if len(lines) == 0 {
		return nil, &RefusedError{What: "a statement the engine parses to nothing", Why: "there is nothing to run"}
	}
	root, _ := astNode(lines[0])
	ok := false
	for _, r := range readRoots {
		ok = ok || strings.HasPrefix(root, r)
	}
	if !ok {
		return nil, &RefusedError{What: "the statement " + root, Why: "it is not a read statement (the engine's parser says so)"}
	}
	var funcs []string
	for i, line := range lines {
		node, depth := astNode(line)
		switch {
		case node == "Set":
			return nil, &RefusedError{What: "SETTINGS", Why: "the read-only path runs with readonly=1 and changes no setting"}
		case depth == 1 && strings.HasPrefix(root, "SelectWithUnionQuery") && !strings.HasPrefix(node, "ExpressionList"):
			return nil, &RefusedError{What: "an output clause (INTO OUTFILE, FORMAT)", Why: "the result goes to gpupool sql's output only"}
		case node == "Function":
			name := astName(line, depth, "Function ")
			if why := functionRefusal(name); why != "" {
				return nil, &RefusedError{What: "the function " + name, Why: why}
			}
			if i > 0 {
				if parent, pd := astNode(lines[i-1]); parent == "TableExpression" && pd == depth-1 && !tableFunctions[strings.ToLower(name)] {
					return nil, &RefusedError{What: "the table function " + name, Why: "the read-only path allows only table functions that make rows from their arguments (numbers, values, view …)"}
				}
			}
			funcs = append(funcs, name)
		case node == "TableIdentifier" || node == "Identifier":
			name := strings.ToLower(astName(line, depth, node+" "))
			if t, ok := strings.CutPrefix(name, "system."); ok {
				if why, denied := deniedSystemTables[t]; denied {
					return nil, &RefusedError{What: "system." + t, Why: why}
				}
			}
		}
	}
	return funcs, nil
}

// astNode returns a line's node type (its first word) and its depth.
func astNode(line string) (string, int) {
	depth := len(line) - len(strings.TrimLeft(line, " "))
	node, _, _ := strings.Cut(line[depth:], " ")
	return node, depth
}

// astName returns the name after prefix in a line at depth, up to its
// " (alias …)" or " (children …)".
func astName(line string, depth int, prefix string) string {
	s := strings.TrimPrefix(line[depth:], prefix)
	if i := strings.Index(s, " ("); i >= 0 {
		s = s[:i]
	}
	return s
}

// checkUserDefined refuses a call of a user-defined function (SQL, executable or
// other): its body or program is not in the statement, so no check here sees
// what it does.
func checkUserDefined(ctx context.Context, st Store, funcs []string) error {
	if len(funcs) == 0 {
		return nil
	}
	res, err := st.Query(ctx, "SELECT name, toString(origin) FROM system.functions WHERE origin != 'System' AND has({names:Array(String)}, name) ORDER BY name LIMIT 1",
		Params{"names": ArrayParam(funcs)})
	if err != nil {
		return fmt.Errorf("read-only SQL: look up user-defined functions: %w", err)
	}
	if len(res.Rows) > 0 {
		return &RefusedError{What: fmt.Sprintf("the user-defined function %v (%v)", res.Rows[0][0], res.Rows[0][1]), Why: "what it runs is not in the statement, so the read-only path cannot check it"}
	}
	return nil
}
