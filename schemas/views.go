package schemas

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"sort"
	"strings"
	"text/template"
)

// The plain views are repeatable, as Flyway's repeatable migrations are: each is one
// file, views/<name>.sql, holding the view's current definition (CREATE OR REPLACE
// VIEW) under a header comment that documents it (docs/finance.md is made from those
// comments). store.Migrate applies them after the versioned migrations whenever
// their text changed. Versioned migrations keep tables, materialized views and data
// changes. views/*.tmpl hold templates the view files share (the daily and monthly
// chargeback are one).
//
//go:embed views/*.sql views/*.tmpl
var viewFS embed.FS

// internalView starts the header of a view that docs/finance.md leaves out.
const internalView = "-- internal:"

// View is one repeatable view, rendered for a database.
type View struct {
	Name string
	// Doc is the header comment without its comment markers: the view's section of
	// docs/finance.md. Internal is set when the header starts with "-- internal:".
	Doc      string
	Internal bool
	// Statement is the CREATE OR REPLACE VIEW statement, rendered.
	Statement string
	// Reads lists the other views the statement reads.
	Reads []string
}

// periodView is what the chargeback_by_period template fills: the column a view
// groups by and the expression that gives it from an hour.
type periodView struct {
	MigrationParams
	Column, Expr string
}

// betweenView is what the job_output_select template fills: Between reads the
// attempts that ended in the period the view's from and to parameters give.
type betweenView struct {
	MigrationParams
	Between bool
}

// samplesView is what the gpu_state template fills: Table is the table its
// per-minute figures come from (gpu_samples, or the rollup gpu_state_minute).
type samplesView struct {
	MigrationParams
	Table string
}

// viewFuncs are the functions view templates may call: samples hands the
// gpu_state template its table, period hands the
// chargeback_by_period template its period column and expression, between the
// job_output_select template its choice of all attempts or a period's,
// requestedGPUs the pricing template a job's GPUs asked for (RequestedGPUsSQL).
var viewFuncs = template.FuncMap{
	"requestedGPUs": RequestedGPUsSQL,
	"samples": func(p MigrationParams, table string) samplesView {
		return samplesView{MigrationParams: p, Table: table}
	},
	"period": func(p MigrationParams, column, expr string) periodView {
		return periodView{MigrationParams: p, Column: column, Expr: expr}
	},
	"between": func(p MigrationParams, between bool) betweenView {
		return betweenView{MigrationParams: p, Between: between}
	},
}

// Views returns every repeatable view rendered for p, in the order to apply them: a
// view comes after the views it reads, and otherwise by name.
func Views(p MigrationParams) ([]View, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("views: %w", err)
	}
	shared, err := template.New("shared").Funcs(viewFuncs).Option("missingkey=error").ParseFS(viewFS, "views/*.tmpl")
	if err != nil {
		return nil, fmt.Errorf("views: parse views/*.tmpl: %w", err)
	}
	paths, err := fs.Glob(viewFS, "views/*.sql")
	if err != nil {
		return nil, fmt.Errorf("views: %w", err)
	}
	byName := map[string]View{}
	for _, path := range paths {
		v, err := renderView(shared, path, p)
		if err != nil {
			return nil, err
		}
		byName[v.Name] = v
	}
	for name, v := range byName {
		refs := regexp.MustCompile(`\b`+regexp.QuoteMeta(p.DB)+`\.([A-Za-z0-9_]+)\b`).FindAllStringSubmatch(v.Statement, -1)
		for _, r := range refs {
			if _, ok := byName[r[1]]; ok && r[1] != name && !slices.Contains(v.Reads, r[1]) {
				v.Reads = append(v.Reads, r[1])
			}
		}
		sort.Strings(v.Reads)
		byName[name] = v
	}
	return orderViews(byName)
}

// renderView reads and renders one view file.
func renderView(shared *template.Template, path string, p MigrationParams) (View, error) {
	name := strings.TrimSuffix(strings.TrimPrefix(path, "views/"), ".sql")
	if !identRe.MatchString(name) {
		return View{}, fmt.Errorf("views: file %s: want <view name>.sql", path)
	}
	src, err := viewFS.ReadFile(path)
	if err != nil {
		return View{}, fmt.Errorf("views: %w", err)
	}
	t, err := shared.Clone()
	if err == nil {
		t, err = t.New(name).Parse(string(src))
	}
	if err != nil {
		return View{}, fmt.Errorf("views: parse %s: %w", path, err)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, p); err != nil {
		return View{}, fmt.Errorf("views: render %s: %w", path, err)
	}
	stmts := SplitStatements(buf.String())
	want := "CREATE OR REPLACE VIEW " + p.DB + "." + name + " "
	if len(stmts) != 1 || !strings.HasPrefix(stmts[0], want) {
		return View{}, fmt.Errorf("views: %s: want one statement starting %q, got %d statements", path, want, len(stmts))
	}
	doc, internal := viewDoc(string(src))
	return View{Name: name, Doc: doc, Internal: internal, Statement: stmts[0]}, nil
}

// viewDoc returns the leading comment of a view file, its "-- " markers removed.
func viewDoc(src string) (doc string, internal bool) {
	var lines []string
	for _, l := range strings.Split(src, "\n") {
		if !strings.HasPrefix(l, "--") {
			break
		}
		lines = append(lines, strings.TrimPrefix(strings.TrimPrefix(l, "--"), " "))
	}
	internal = len(lines) > 0 && strings.HasPrefix("-- "+lines[0], internalView)
	return strings.TrimSpace(strings.Join(lines, "\n")), internal
}

// orderViews sorts the views so that each comes after those it reads (by name among
// the ones ready together), or names a cycle.
func orderViews(byName map[string]View) ([]View, error) {
	done := map[string]bool{}
	var out []View
	for len(out) < len(byName) {
		var ready []string
		for name, v := range byName {
			if !done[name] && !slices.ContainsFunc(v.Reads, func(r string) bool { return !done[r] }) {
				ready = append(ready, name)
			}
		}
		if len(ready) == 0 {
			var left []string
			for name := range byName {
				if !done[name] {
					left = append(left, name)
				}
			}
			sort.Strings(left)
			return nil, fmt.Errorf("views: %s read each other in a cycle", strings.Join(left, ", "))
		}
		sort.Strings(ready)
		for _, name := range ready {
			done[name] = true
			out = append(out, byName[name])
		}
	}
	return out, nil
}

// ViewsChecksum identifies the rendered statements of vs, in order: store.Migrate
// re-applies the views when the checksum it recorded differs. A header comment is
// no part of a statement, so editing a view's documentation applies nothing.
func ViewsChecksum(vs []View) string {
	h := sha256.New()
	for _, v := range vs {
		fmt.Fprintf(h, "%s\x00%s\x00", v.Name, v.Statement)
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}
