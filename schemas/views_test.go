package schemas

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// createView matches a statement that creates or replaces a plain view.
var createView = regexp.MustCompile(`(?i)^\s*CREATE\s+(OR\s+REPLACE\s+)?VIEW\b`)

// TestMigrationsDefineNoView: plain views live in views/, one file each; no
// versioned migration defines one (materialized views, which write rollups, stay
// in migrations).
func TestMigrationsDefineNoView(t *testing.T) {
	ms, err := Migrations(MigrationParams{DB: "db1", RawTTLDays: 30})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		for _, s := range m.Statements {
			if createView.MatchString(s) {
				t.Errorf("migration %04d_%s defines a view: %.70q; put it in schemas/views/<name>.sql", m.Version, m.Name, s)
			}
		}
	}
	if !createView.MatchString("create or replace view x AS SELECT 1") || createView.MatchString("CREATE MATERIALIZED VIEW x") {
		t.Fatal("createView does not tell a plain view from a materialized one")
	}
}

func TestViews(t *testing.T) {
	p := MigrationParams{DB: "db1", Cluster: "c1", RawTTLDays: 30}
	vs, err := Views(p)
	if err != nil {
		t.Fatal(err)
	}
	pos := map[string]int{}
	for i, v := range vs {
		pos[v.Name] = i
		if !strings.HasPrefix(v.Statement, "CREATE OR REPLACE VIEW db1."+v.Name+" ON CLUSTER `c1` AS\nSELECT") {
			t.Errorf("%s: statement starts %.60q", v.Name, v.Statement)
		}
		if strings.Contains(v.Statement, "{{") || strings.Contains(v.Statement, "<no value>") {
			t.Errorf("%s: unrendered placeholder", v.Name)
		}
		if v.Doc == "" {
			t.Errorf("%s: no header comment", v.Name)
		}
	}
	for _, v := range vs {
		for _, r := range v.Reads {
			if pos[r] >= pos[v.Name] {
				t.Errorf("%s reads %s but comes first", v.Name, r)
			}
		}
	}
	if daily := vs[pos["chargeback_daily"]]; !slices.Equal(daily.Reads, []string{"chargeback_job_priced"}) {
		t.Errorf("chargeback_daily reads %v, want chargeback_job_priced", daily.Reads)
	}
	// The two periods come from one template: the same statement but for the period.
	daily, monthly := vs[pos["chargeback_daily"]].Statement, vs[pos["chargeback_monthly"]].Statement
	daily = strings.NewReplacer("chargeback_daily", "V", "toDate(c.hour) AS day", "P", "GROUP BY day", "GROUP BY").Replace(daily)
	monthly = strings.NewReplacer("chargeback_monthly", "V", "toStartOfMonth(c.hour) AS month", "P", "GROUP BY month", "GROUP BY").Replace(monthly)
	if daily != monthly {
		t.Errorf("chargeback_daily and chargeback_monthly differ beyond their period:\n%s\n%s", daily, monthly)
	}
	single, err := Views(MigrationParams{DB: "db1", RawTTLDays: 30})
	if err != nil {
		t.Fatal(err)
	}
	if ViewsChecksum(single) == ViewsChecksum(vs) || ViewsChecksum(single) != ViewsChecksum(single) {
		t.Error("ViewsChecksum does not tell the rendered statements apart")
	}
}

func TestOrderViewsCycle(t *testing.T) {
	_, err := orderViews(map[string]View{"a": {Name: "a", Reads: []string{"b"}}, "b": {Name: "b", Reads: []string{"a"}}, "c": {Name: "c"}})
	if err == nil || !strings.Contains(err.Error(), "a, b read each other") {
		t.Fatalf("err = %v, want the cycle named", err)
	}
}

const (
	financeDoc   = "../docs/finance.md"
	financeIntro = "views/finance_intro.md"
	financeOutro = "views/finance_outro.md"
	rawBegin     = "<!-- raw-query:begin"
	rawEnd       = "<!-- raw-query:end -->"
)

// financeDocText is docs/finance.md as generated: the intro, every view's header
// comment (internal views left out) under its name, the outro. The raw-table query
// between the raw-query markers is analyzer/chargeback's to write (its
// TestFinanceDoc -update), so it is kept from the current page.
func financeDocText(intro, outro, current string, vs []View) string {
	var b strings.Builder
	b.WriteString("<!-- Generated from schemas/views (finance_intro.md, each view's header comment, finance_outro.md): edit those, then go test ./schemas -run TestFinanceDoc -update -->\n")
	b.WriteString(strings.TrimRight(intro, "\n") + "\n")
	names := make([]View, 0, len(vs))
	for _, v := range vs {
		if !v.Internal {
			names = append(names, v)
		}
	}
	slices.SortFunc(names, func(a, b View) int { return strings.Compare(a.Name, b.Name) })
	for _, v := range names {
		b.WriteString("\n### `" + v.Name + "`\n\n" + v.Doc + "\n")
	}
	b.WriteString("\n" + strings.TrimRight(outro, "\n") + "\n")
	out := b.String()
	if i, j := strings.Index(current, rawBegin), strings.Index(current, rawEnd); i >= 0 && j > i {
		if k, l := strings.Index(out, rawBegin), strings.Index(out, rawEnd); k >= 0 && l > k {
			out = out[:k] + current[i:j] + out[l:]
		}
	}
	return out
}

// TestFinanceDoc keeps docs/finance.md what the view files say; -update rewrites it.
func TestFinanceDoc(t *testing.T) {
	read := func(path string) string {
		raw, err := os.ReadFile(path)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return string(raw)
	}
	vs, err := Views(MigrationParams{DB: "gpupool", RawTTLDays: 30})
	if err != nil {
		t.Fatal(err)
	}
	current := read(financeDoc)
	want := financeDocText(read(financeIntro), read(financeOutro), current, vs)
	if *update && want != current {
		if err := os.WriteFile(financeDoc, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		current = want
	}
	if current != want {
		t.Errorf("%s is not what schemas/views generate: go test ./schemas -run TestFinanceDoc -update", financeDoc)
	}
	for _, v := range vs {
		if heading := "### `" + v.Name + "`\n"; strings.Contains(current, heading) == v.Internal {
			t.Errorf("%s: heading of %s present = %v, internal = %v", financeDoc, v.Name, !v.Internal, v.Internal)
		}
	}
	// The raw query is kept: the generator never drops analyzer/chargeback's part.
	kept := financeDocText("", rawBegin+" x -->\nold\n"+rawEnd+"\n", rawBegin+" x -->\nnew\n"+rawEnd, nil)
	if !strings.Contains(kept, "\nnew\n") {
		t.Errorf("the raw query between the markers is not kept from the current page:\n%s", kept)
	}
}
