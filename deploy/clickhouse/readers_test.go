package clickhouse

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gpupool/gpupool/schemas"
)

// viewReaders are the components that read the store through views (schemas/views)
// and the query functions of other packages, never a table by name: their roles
// then need the views, and a table can change under a view without them noticing.
var viewReaders = []string{"../../console", "../../reports"}

var (
	createdTable = regexp.MustCompile(`^CREATE (?:TABLE|MATERIALIZED VIEW) IF NOT EXISTS gpupool\.([a-z0-9_]+) `)
	// readsName is a FROM or JOIN and the name after it, in any case, across lines.
	readsName = regexp.MustCompile(`(?i)\b(?:FROM|JOIN)\s+([A-Za-z_][A-Za-z0-9_.]*)`)
)

// baseTables are the tables and materialized views the migrations create, and
// store.Migrate's own table: everything of the schema that is not a plain view.
func baseTables(t *testing.T) map[string]bool {
	t.Helper()
	ms, err := schemas.Migrations(schemas.MigrationParams{DB: "gpupool", RawTTLDays: 1})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{"schema_migrations": true}
	for _, m := range ms {
		for _, q := range m.Statements {
			if g := createdTable.FindStringSubmatch(strings.TrimSpace(q)); g != nil {
				out[g[1]] = true
			}
		}
	}
	return out
}

// tablesNamed returns the base tables that the string literals of a Go file read
// with FROM or JOIN ("db.table" counts as table).
func tablesNamed(t *testing.T, path string, src any, tables map[string]bool) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		s, err := strconv.Unquote(lit.Value)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, m := range readsName.FindAllStringSubmatch(s, -1) {
			name := m[1][strings.LastIndex(m[1], ".")+1:]
			if tables[name] && !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
		return true
	})
	return out
}

// TestViewReadersNameNoTable fails when the non-test Go code of the console or the
// reports names one of the store's tables in a FROM or a JOIN: they read views
// (one file each in schemas/views) or call the query functions of the packages
// that own the tables.
func TestViewReadersNameNoTable(t *testing.T) {
	tables := baseTables(t)
	for _, want := range []string{"gpu_hour", "gpu_samples", "findings", "actions", "chargeback_refreshes", "schema_migrations"} {
		if !tables[want] {
			t.Fatalf("the migrations' tables %v lack %s: the check below would miss it", tables, want)
		}
	}
	if tables["findings_open"] || tables["jobs"] {
		t.Fatal("a plain view counted as a table")
	}
	probe := "package p\nconst q = `SELECT x\nfrom  gpupool.gpu_hour AS h LEFT JOIN actions USING (id)`\nconst ok = `SELECT 1 FROM findings_open`\n"
	if got := tablesNamed(t, "probe.go", probe, tables); !slices.Equal(got, []string{"gpu_hour", "actions"}) {
		t.Fatalf("the probe's tables read as %v, want [gpu_hour actions]", got)
	}
	files := 0
	for _, dir := range viewReaders {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			files++
			if named := tablesNamed(t, path, nil, tables); len(named) > 0 {
				t.Errorf("%s reads the table(s) %s: read a view of schemas/views (add one, and grant it) or a query function of the package owning the table",
					strings.TrimPrefix(path, "../../"), strings.Join(named, ", "))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if files < 20 {
		t.Fatalf("read %d Go files under %v: the walk missed the packages", files, viewReaders)
	}
}
