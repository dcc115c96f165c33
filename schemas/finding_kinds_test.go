package schemas

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestKindDescriptorsComplete: every kind declared in finding_kinds.go is in
// FindingKinds once, with a title and a description, a severity that is one of
// Severities or empty, and precedence that names other known kinds.
func TestKindDescriptorsComplete(t *testing.T) {
	_, declared := declaredKinds(t)
	if !slices.Equal(declared, PolicyKinds) {
		t.Errorf("constants %v, descriptors %v: each kind constant needs one descriptor, in the same order", declared, PolicyKinds)
	}
	for _, d := range KindInfos() {
		if d.Title == "" || d.Description == "" {
			t.Errorf("%s: title %q, description %q: both are needed", d.Kind, d.Title, d.Description)
		}
		if d.Severity != "" && d.Severity.Rank() == 0 {
			t.Errorf("%s: severity %q is not one of %v", d.Kind, d.Severity, Severities)
		}
		if d.Severity != "" && !d.Advice {
			t.Errorf("%s: a fixed severity is for advice with no waste; this kind is not Advice", d.Kind)
		}
		if d.ExplainsAdvice && d.Advice {
			t.Errorf("%s: advice that explains away all advice would suppress itself", d.Kind)
		}
		for _, e := range d.Explains {
			if !e.Kind.Known() || e.Kind == d.Kind {
				t.Errorf("%s explains %q: want another kind of %v", d.Kind, e.Kind, FindingKinds)
			}
		}
		if got := d.Kind.Info(); got.Title != d.Title {
			t.Errorf("%s.Info() = %+v, want its descriptor", d.Kind, got)
		}
	}
	if got := FindingKind("nope").Info(); !reflect.DeepEqual(got, KindInfo{Kind: "nope"}) {
		t.Errorf(`Info of an unknown kind = %+v, want only Kind set`, got)
	}
	if got := PerProcessKinds(); !slices.Equal(got, []FindingKind{KindZombie}) {
		t.Errorf("PerProcessKinds() = %v, want [zombie]", got)
	}
}

// declaredKinds lists the FindingKind constants of finding_kinds.go in order:
// their names and values.
func declaredKinds(t *testing.T) ([]string, []FindingKind) {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "finding_kinds.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var out []FindingKind
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || vs.Type == nil || len(vs.Values) != 1 {
			return true
		}
		if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "FindingKind" {
			if lit, ok := vs.Values[0].(*ast.BasicLit); ok {
				names = append(names, vs.Names[0].Name)
				out = append(out, FindingKind(strings.Trim(lit.Value, `"`)))
			}
		}
		return true
	})
	return names, out
}

// kindOutOfPlace is a use of a finding kind constant that belongs in a kind's
// descriptor: a switch case, a map literal keyed by kinds, a list of kinds, a
// condition on several kinds, or (outside the analyzer's findings package) a
// comparison with one kind.
type kindOutOfPlace struct{ pos, what string }

// Files and folders the per-kind rules do not apply to. The descriptors and the
// detector table are where per-kind facts live. The simulator's ground truth
// (collector/sim: which simulated workload makes which finding) and the
// scheduler's simulation runner (internal/simrun: a simulated analyzer with its
// own windows, and what each true kind costs) switch on the simulator's truth,
// not on a kind's facts, and are left out.
var (
	kindTablesAt = []string{"schemas/finding_kinds.go", "analyzer/findings/kinds.go"}
	// kindComparesAt may compare a finding's kind with one kind: the detectors
	// name their own kind, and the hung detector's stall signals are its own.
	kindComparesAt = []string{"analyzer/findings/"}
	kindSimAt      = []string{"collector/sim/", "internal/simrun/"}
)

// TestNoPerKindSwitches keeps each kind's facts in its descriptor: no non-test Go
// file of the module outside the descriptors, the detector table and the
// simulator switches on finding kinds, keys a map literal by them or lists them,
// and only the analyzer's findings package compares a kind with a constant.
// Adding a kind then touches schemas/finding_kinds.go, analyzer/findings/kinds.go
// and its detector's own file.
func TestNoPerKindSwitches(t *testing.T) {
	names, _ := declaredKinds(t)
	var bad []kindOutOfPlace
	err := filepath.WalkDir("..", func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(path, "../"))
		if e.IsDir() {
			if n := e.Name(); path != ".." && (strings.HasPrefix(n, ".") || n == "testdata" || n == "vendor" || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") || hasAnyPrefix(rel, kindSimAt) || slices.Contains(kindTablesAt, rel) {
			return nil
		}
		bad = append(bad, kindUses(t, path, rel, names)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Errorf("%s: %s: put the per-kind fact in the kind's descriptor (schemas/finding_kinds.go) or the detector table (analyzer/findings/kinds.go)", b.pos, b.what)
	}
}

func hasAnyPrefix(s string, prefixes []string) bool {
	return slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(s, p) })
}

// kindUses returns the out-of-place uses of kind constants in one file.
func kindUses(t *testing.T, path, rel string, names []string) []kindOutOfPlace {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	inSchemas := f.Name.Name == "schemas" && filepath.ToSlash(filepath.Dir(rel)) == "schemas"
	isKind := func(x ast.Expr) bool { return isKindConst(x, names, inSchemas) }
	compares := !hasAnyPrefix(rel, kindComparesAt)
	var out []kindOutOfPlace
	add := func(n ast.Node, what string) {
		out = append(out, kindOutOfPlace{fset.Position(n.Pos()).String(), what})
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CaseClause:
			if slices.ContainsFunc(n.List, isKind) {
				add(n, "a switch case on a finding kind")
			}
		case *ast.CompositeLit:
			kinds := 0
			for _, el := range n.Elts {
				if kv, ok := el.(*ast.KeyValueExpr); ok && isKind(kv.Key) {
					add(n, "a literal keyed by finding kinds")
					return true
				}
				if isKind(el) {
					kinds++
				}
			}
			if kinds > 1 {
				add(n, "a literal listing finding kinds")
			}
		case *ast.BinaryExpr:
			if n.Op == token.LOR || n.Op == token.LAND {
				if kindTests(n, n.Op, isKind) > 1 {
					add(n, "a condition on a set of finding kinds")
					return false
				}
			}
			if compares && (n.Op == token.EQL || n.Op == token.NEQ) && (isKind(n.X) || isKind(n.Y)) {
				add(n, "a comparison with one finding kind")
			}
		}
		return true
	})
	return out
}

// kindTests counts the comparisons with a kind constant in a chain of op (||
// or &&), as in k == KindA || k == KindB.
func kindTests(x ast.Expr, op token.Token, isKind func(ast.Expr) bool) int {
	switch x := x.(type) {
	case *ast.ParenExpr:
		return kindTests(x.X, op, isKind)
	case *ast.BinaryExpr:
		if x.Op == op {
			return kindTests(x.X, op, isKind) + kindTests(x.Y, op, isKind)
		}
		if (x.Op == token.EQL || x.Op == token.NEQ) && (isKind(x.X) || isKind(x.Y)) {
			return 1
		}
	}
	return 0
}

// isKindConst reports whether x names one of the kind constants names:
// schemas.KindX, or KindX inside package schemas.
func isKindConst(x ast.Expr, names []string, inSchemas bool) bool {
	name := ""
	switch x := x.(type) {
	case *ast.SelectorExpr:
		if id, ok := x.X.(*ast.Ident); ok && id.Name == "schemas" {
			name = x.Sel.Name
		}
	case *ast.Ident:
		if inSchemas {
			name = x.Name
		}
	}
	return name != "" && slices.Contains(names, name)
}
