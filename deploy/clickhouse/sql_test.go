package clickhouse

import (
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

func TestMain(m *testing.M) { chdbtest.Main(m) }

const financeDoc = "../../docs/finance.md"

// statements reads a SQL file and returns its statements: comments dropped,
// whitespace collapsed, split at semicolons outside quotes.
func statements(t *testing.T, file string) []string {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	var cur strings.Builder
	quoted := false
	for _, line := range strings.Split(string(raw), "\n") {
		for i := 0; i < len(line); i++ {
			c := line[i]
			switch {
			case c == '\'':
				quoted = !quoted
			case !quoted && c == '-' && strings.HasPrefix(line[i:], "--"):
				i = len(line)
				continue
			case !quoted && c == ';':
				if s := strings.Join(strings.Fields(cur.String()), " "); s != "" {
					out = append(out, s)
				}
				cur.Reset()
				continue
			}
			cur.WriteByte(c)
		}
		cur.WriteByte(' ')
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		t.Errorf("%s: text after the last semicolon: %q", file, s)
	}
	return out
}

// TestStatementsParse runs every statement of the SQL files through ClickHouse's
// own parser (formatQuery): chDB has no access storage to run CREATE ROLE or
// GRANT in, but a statement it cannot parse would fail on a server too.
func TestStatementsParse(t *testing.T) {
	s := chdbtest.Open(t)
	parses := func(q string) error {
		_, err := s.Query(t.Context(), "SELECT formatQuery({q:String}) AS f", store.Params{"q": q})
		return err
	}
	if parses("GRANT SELEC ON gpupool.x TO r") == nil {
		t.Fatal("formatQuery accepted a misspelt GRANT: the check below would prove nothing")
	}
	for _, file := range []string{"finance.sql", "grafana.sql"} {
		t.Run(file, func(t *testing.T) {
			stmts := statements(t, file)
			if len(stmts) == 0 {
				t.Fatal("no statements")
			}
			for _, q := range stmts {
				if err := parses(q); err != nil {
					t.Errorf("%v\n%s", err, q)
				}
			}
		})
	}
}

var (
	grantSelect = regexp.MustCompile(`^GRANT SELECT ON gpupool\.([a-z_]+) TO gpupool_finance$`)
	alterView   = regexp.MustCompile(`^ALTER TABLE gpupool\.([a-z_]+) MODIFY SQL SECURITY DEFINER$`)
	docHeading  = regexp.MustCompile("(?m)^### `([a-z_]+)`$")
)

// financeObjects are the tables and views docs/finance.md documents.
func financeObjects(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile(financeDoc)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range docHeading.FindAllStringSubmatch(string(doc), -1) {
		out = append(out, m[1])
	}
	if len(out) == 0 {
		t.Fatalf("%s: no ### `name` sections", financeDoc)
	}
	slices.Sort(out)
	return out
}

// TestFinanceGrants keeps finance.sql's grants equal to what docs/finance.md
// documents, checks each granted object exists once migrated, that every granted
// view (and nothing else) is switched to SQL SECURITY DEFINER, and runs those
// ALTERs on the migrated database. It also pins the few other grants: the finance
// user is read-only, and the pricing role may add price book rows and read only what
// `gpupool pricebook load` and `check` read beyond the finance views.
func TestFinanceGrants(t *testing.T) {
	stmts := statements(t, "finance.sql")
	granted, altered := map[string]bool{}, map[string]bool{}
	var alters []string
	for _, q := range stmts {
		if m := grantSelect.FindStringSubmatch(q); m != nil {
			granted[m[1]] = true
			continue
		}
		if m := alterView.FindStringSubmatch(q); m != nil {
			altered[m[1]] = true
			alters = append(alters, q)
			continue
		}
		switch {
		case strings.HasPrefix(q, "CREATE ROLE IF NOT EXISTS gpupool_"),
			q == "GRANT gpupool_finance TO finance", q == "GRANT gpupool_finance TO gpupool_pricing",
			q == "GRANT INSERT ON gpupool.price_book TO gpupool_pricing", q == "GRANT gpupool_pricing TO finance_admin",
			q == "GRANT INSERT ON gpupool.chargeback_settings TO gpupool_pricing",
			q == "GRANT SELECT ON gpupool.schema_migrations TO gpupool_pricing", q == "GRANT SELECT ON gpupool.gpu_hour TO gpupool_pricing",
			strings.HasPrefix(q, "CREATE USER IF NOT EXISTS finance_admin ") && strings.HasSuffix(q, " DEFAULT ROLE gpupool_pricing"):
		case strings.HasPrefix(q, "CREATE USER IF NOT EXISTS finance "):
			if !strings.HasSuffix(q, " DEFAULT ROLE gpupool_finance SETTINGS readonly = 1") {
				t.Errorf("the finance user must have DEFAULT ROLE gpupool_finance and readonly = 1: %s", q)
			}
		default:
			t.Errorf("finance.sql: unexpected statement (a grant beyond the documented views?): %s", q)
		}
	}

	doc := financeObjects(t)
	if got := slices.Sorted(maps.Keys(granted)); !slices.Equal(got, doc) {
		t.Errorf("finance.sql grants SELECT on\n  %v\ndocs/finance.md documents\n  %v", got, doc)
	}

	s := chdbtest.Open(t)
	ctx := t.Context()
	if _, err := store.Migrate(ctx, s, schemas.MigrationParams{DB: s.Database(), RawTTLDays: 3650}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Query(ctx, "SELECT name, engine FROM system.tables WHERE database = currentDatabase()", nil)
	if err != nil {
		t.Fatal(err)
	}
	engine := map[string]string{}
	for i := range res.Rows {
		name, _ := res.String(i, "name")
		engine[name], _ = res.String(i, "engine")
	}
	for _, name := range doc {
		e, ok := engine[name]
		switch {
		case !ok:
			t.Errorf("%s is documented and granted but no migration creates it", name)
		case e == "View" && !altered[name]:
			t.Errorf("view %s is granted but not made SQL SECURITY DEFINER: finance could not read it without the tables under it", name)
		case e != "View" && altered[name]:
			t.Errorf("%s is a %s, not a view: MODIFY SQL SECURITY does not apply", name, e)
		}
	}
	for name := range altered {
		if !granted[name] {
			t.Errorf("%s is made SQL SECURITY DEFINER but not granted", name)
		}
	}
	for _, q := range alters {
		q = strings.Replace(q, "gpupool.", s.Database()+".", 1)
		if err := s.Exec(ctx, q, nil); err != nil {
			t.Errorf("%s: %v", q, err)
		}
	}
}
