package engine

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// pureImports are all the engine may import: the standard library's pure
// helpers, the contract (schemas), the node placer and the executors'
// vocabulary (executor.Target, a plain value; no executor itself).
var pureImports = []string{
	"cmp", "container/heap", "errors", "fmt", "maps", "math", "slices", "sort", "strconv", "strings", "time",
	"github.com/gpupool/gpupool/schemas",
	"github.com/gpupool/gpupool/scheduler/placement",
	"github.com/gpupool/gpupool/scheduler/executor",
}

// clockReads are the time package's functions that read the clock or wait.
var clockReads = []string{"Now", "Since", "Until", "Sleep", "After", "AfterFunc", "Tick", "NewTimer", "NewTicker"}

// TestEnginePure: the engine imports nothing that does I/O (not the
// scheduler, the store, the bus, an executor) and never reads the clock: every
// method takes the time it runs at.
func TestEnginePure(t *testing.T) {
	files, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, f := range files {
		name := f.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range file.Imports {
			if path, _ := strconv.Unquote(imp.Path.Value); !slices.Contains(pureImports, path) {
				t.Errorf("%s imports %s: the engine is pure (see doc.go); add it to pureImports only if it does no I/O", name, path)
			}
		}
		for _, bad := range clockCalls(file) {
			t.Errorf("%s: %s calls time.%s: the engine takes the time as a parameter", name, fset.Position(bad.Pos()), bad.Sel.Name)
		}
	}
	if checked < 10 {
		t.Fatalf("checked %d files: not the engine's directory?", checked)
	}
}

// clockCalls returns the time.<clock read> selectors in file.
func clockCalls(file *ast.File) []*ast.SelectorExpr {
	var out []*ast.SelectorExpr
	ast.Inspect(file, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "time" && slices.Contains(clockReads, sel.Sel.Name) {
				out = append(out, sel)
			}
		}
		return true
	})
	return out
}

// TestEnginePureCatches checks the check: a clock read is found.
func TestEnginePureCatches(t *testing.T) {
	file, err := parser.ParseFile(token.NewFileSet(), "x.go", "package x\nimport \"time\"\nvar _ = time.Now()\n", 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := clockCalls(file); len(got) != 1 || got[0].Sel.Name != "Now" {
		t.Fatalf("clockCalls found %d", len(got))
	}
}
