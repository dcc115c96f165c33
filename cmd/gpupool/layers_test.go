package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gpupool/gpupool/schemas"
)

// The module's floors, lowest first: a package may import its own component and
// the components on lower floors, never a peer or a floor above. The order is the
// data flow: the contract (and secure/, the helpers every component uses to keep
// secrets out of logs and data files private, and testservers/, the real external
// servers — Slurm — that tests of every floor start), the bus, the store and the APIs' authentication, what
// produces samples, what loads them, what judges them, what acts on the
// judgement, what reports it, the web console that shows it all;
// deploy's asset checks, and the composition roots (internal/, cmd/, bench/),
// which may import each other, on top.
var floors = [][]string{
	{"schemas", "secure", "testservers"},
	{"auth", "bus", "store"},
	{"collector"},
	{"ingest"},
	{"analyzer"},
	{"scheduler"},
	{"reports"},
	{"console"},
	{"deploy"},
	{"internal", "cmd", "bench"},
}

const modulePath = "github.com/gpupool/gpupool"

// goPackage is one directory's imports of the module, split by test and non-test
// files.
type goPackage struct {
	dir           string              // slash-separated, relative to the module root
	imports, test map[string][]string // imported path → files importing it
}

// readPackages parses the imports of every Go file under root.
func readPackages(t *testing.T, root string) map[string]*goPackage {
	t.Helper()
	pkgs := map[string]*goPackage{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			if path != root {
				// A nested module (tools/…) builds apart from gpupool's.
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		dir := filepath.ToSlash(rel)
		p := pkgs[dir]
		if p == nil {
			p = &goPackage{dir: dir, imports: map[string][]string{}, test: map[string][]string{}}
			pkgs[dir] = p
		}
		into := p.imports
		if strings.HasSuffix(path, "_test.go") {
			into = p.test
		}
		for _, imp := range f.Imports {
			ip, _ := strconv.Unquote(imp.Path.Value)
			if ip == modulePath || strings.HasPrefix(ip, modulePath+"/") {
				key := strings.TrimPrefix(strings.TrimPrefix(ip, modulePath), "/")
				into[key] = append(into[key], filepath.Base(path))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// floorOf is the floor of a package directory's component, and its component.
func floorOf(dir string) (int, string) {
	comp, _, _ := strings.Cut(dir, "/")
	for i, f := range floors {
		if slices.Contains(f, comp) {
			return i, comp
		}
	}
	return -1, comp
}

// layerViolations lists the imports that run sideways or up the floors. deploy's
// own code is embedded assets that import nothing of the module, so anything may
// embed them; its tests check the assets against the components and sit on its
// floor.
func layerViolations(pkgs map[string]*goPackage) []string {
	var out []string
	for _, p := range pkgs {
		floor, comp := floorOf(p.dir)
		if floor < 0 {
			out = append(out, p.dir+": a top-level folder no floor names (add it to floors)")
			continue
		}
		check := func(imports map[string][]string, kind string) {
			for ip, files := range imports {
				f, c := floorOf(ip)
				switch {
				case c == comp, floor == len(floors)-1 && f == floor:
				case c == "deploy" && comp != "deploy":
				case comp == "deploy" && kind == "imports":
					out = append(out, p.dir+" ("+strings.Join(files, ", ")+") imports "+ip+": deploy's code is assets and imports nothing of the module")
				case f >= floor:
					out = append(out, p.dir+" ("+kind+" in "+strings.Join(files, ", ")+") imports "+ip+
						": "+c+" is on floor "+strconv.Itoa(f)+", "+comp+" on floor "+strconv.Itoa(floor))
				}
			}
		}
		check(p.imports, "imports")
		check(p.test, "tests")
	}
	slices.Sort(out)
	return out
}

// TestLayers keeps the import graph in the floors' order, tests included.
func TestLayers(t *testing.T) {
	for _, v := range layerViolations(readPackages(t, "../..")) {
		t.Error(v)
	}
}

// TestLayersCatchesUpwardImports checks the check: a store importing the scheduler,
// a peer import and deploy code importing a component are all reported.
func TestLayersCatchesUpwardImports(t *testing.T) {
	pkgs := map[string]*goPackage{
		"store":         {dir: "store", imports: map[string][]string{"scheduler": {"x.go"}, "schemas": {"y.go"}}},
		"collector/sim": {dir: "collector/sim", imports: map[string][]string{"collector": {"a.go"}}, test: map[string][]string{"ingest": {"a_test.go"}}},
		"deploy":        {dir: "deploy", imports: map[string][]string{"schemas": {"embed.go"}}, test: map[string][]string{"store": {"t_test.go"}}},
		"cmd/gpupool":   {dir: "cmd/gpupool", imports: map[string][]string{"reports/billing": {"r.go"}}},
		"docs":          {dir: "docs", imports: map[string][]string{}},
	}
	got := layerViolations(pkgs)
	want := []string{"collector/sim (tests", "deploy (embed.go) imports schemas", "docs: a top-level folder", "store (imports in x.go) imports scheduler"}
	if len(got) != len(want) {
		t.Fatalf("violations:\n%s\nwant %d", strings.Join(got, "\n"), len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w) {
			t.Errorf("violation %d = %q, want it to start with %q", i, got[i], w)
		}
	}
}

// under reports whether dir is comp or a package below it.
func under(dir, comp string) bool { return dir == comp || strings.HasPrefix(dir, comp+"/") }

// rootOrDaemon reports whether dir is a composition root (cmd/, internal/,
// bench/) or a component's daemon package (<component>/daemon): the only
// places that choose a store backend or start ingest.
func rootOrDaemon(dir string) bool {
	return under(dir, "cmd") || under(dir, "internal") || under(dir, "bench") || strings.HasSuffix(dir, "/daemon")
}

// importRules are what the floors alone do not say, over non-test imports
// (tests may build fixtures from lower floors' simulators): each names the
// importers it binds, the imports it forbids them, and why.
var importRules = []struct {
	binds, forbids func(dir string) bool
	why            string
}{
	{func(d string) bool { return under(d, "analyzer") }, func(ip string) bool { return under(ip, "collector") || under(ip, "ingest") },
		"the analyzer judges what the store holds: it imports neither the collector nor ingest (harnesses that drive them live in internal/)"},
	{func(d string) bool { return under(d, "reports") }, func(ip string) bool { return under(ip, "scheduler") },
		"reports read the store: they never import the scheduler (the demo's summary is internal/summary)"},
	{func(d string) bool { return !rootOrDaemon(d) && !under(d, "store") }, func(ip string) bool { return ip == "store/backend" },
		"only composition roots and daemons choose a store backend"},
	{func(d string) bool { return !rootOrDaemon(d) && !under(d, "ingest") }, func(ip string) bool { return under(ip, "ingest") },
		"only composition roots and daemons start ingest"},
	{func(string) bool { return true }, func(ip string) bool { return ip == "store/storetest" },
		"store/storetest is the backends' shared test suite: only tests import it"},
}

// ruleViolations lists the non-test imports importRules forbid.
func ruleViolations(pkgs map[string]*goPackage) []string {
	var out []string
	for _, p := range pkgs {
		for ip, files := range p.imports {
			for _, r := range importRules {
				if r.binds(p.dir) && r.forbids(ip) {
					out = append(out, p.dir+" ("+strings.Join(files, ", ")+") imports "+ip+": "+r.why)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestImportRules keeps the harnesses above the components they drive.
func TestImportRules(t *testing.T) {
	for _, v := range ruleViolations(readPackages(t, "../..")) {
		t.Error(v)
	}
}

// TestImportRulesCatch checks the check: each rule reports its case, tests
// and the allowed importers go free.
func TestImportRulesCatch(t *testing.T) {
	pkgs := map[string]*goPackage{
		"analyzer/x":       {dir: "analyzer/x", imports: map[string][]string{"collector/sim": {"a.go"}}, test: map[string][]string{"ingest": {"a_test.go"}}},
		"reports/y":        {dir: "reports/y", imports: map[string][]string{"scheduler/simrun": {"b.go"}}},
		"console":          {dir: "console", imports: map[string][]string{"store/backend": {"serve.go"}}},
		"console/daemon":   {dir: "console/daemon", imports: map[string][]string{"store/backend": {"daemon.go"}}},
		"scheduler/z":      {dir: "scheduler/z", imports: map[string][]string{"ingest": {"c.go"}}},
		"internal/harness": {dir: "internal/harness", imports: map[string][]string{"ingest": {"d.go"}, "store/backend": {"d.go"}}},
		"store/chdb":       {dir: "store/chdb", test: map[string][]string{"store/storetest": {"store_test.go"}}},
		"store/x":          {dir: "store/x", imports: map[string][]string{"store/storetest": {"e.go"}}},
	}
	got := ruleViolations(pkgs)
	want := []string{"analyzer/x (a.go) imports collector/sim", "console (serve.go) imports store/backend", "reports/y (b.go) imports scheduler/simrun",
		"scheduler/z (c.go) imports ingest", "store/x (e.go) imports store/storetest"}
	if len(got) != len(want) {
		t.Fatalf("violations:\n%s\nwant %d", strings.Join(got, "\n"), len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w) {
			t.Errorf("violation %d = %q, want it to start with %q", i, got[i], w)
		}
	}
}

// TestCmdOnlyWires keeps cmd/gpupool a thin layer: at most 1,200 non-test lines and
// no function longer than 60 lines.
func TestCmdOnlyWires(t *testing.T) {
	const maxLines, maxFuncLines = 1200, 60
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	total := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		total += strings.Count(string(data), "\n")
		f, err := parser.ParseFile(fset, name, data, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok {
				if n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1; n > maxFuncLines {
					t.Errorf("%s: func %s is %d lines (at most %d: move the logic into its component)", name, fn.Name.Name, n, maxFuncLines)
				}
			}
		}
	}
	if total > maxLines {
		t.Errorf("cmd/gpupool holds %d non-test lines, at most %d: cmd only parses flags, loads config and wires components", total, maxLines)
	}
}

// TestOneFindingVocabulary keeps the finding kinds spelled in one place: no Go
// file outside schemas (tests aside) writes a kind's name as a string literal;
// they use the schemas constants (YAML keys in struct tags are not values). The
// one-word kinds (idle, zombie) are also plain words, in chart labels say, so the
// check looks for the names no prose uses: memory_bound, wrong_card, low_util.
func TestOneFindingVocabulary(t *testing.T) {
	kinds := map[string]bool{}
	for _, k := range schemas.FindingKinds {
		if strings.Contains(string(k), "_") {
			kinds[strconv.Quote(string(k))] = true
		}
	}
	fset := token.NewFileSet()
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("../..", path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "schemas" || rel != "." && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		tags := map[*ast.BasicLit]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.Field:
				if n.Tag != nil {
					tags[n.Tag] = true
				}
			case *ast.BasicLit:
				if n.Kind == token.STRING && kinds[n.Value] && !tags[n] {
					t.Errorf("%s: finding kind %s spelled out; use the schemas.Kind… constant", fset.Position(n.Pos()), n.Value)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
