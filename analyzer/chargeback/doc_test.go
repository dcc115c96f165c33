package chargeback

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/gpupool/gpupool/store"
)

const financeDoc = "../../docs/finance.md"

// financeObjects are the tables and views docs/finance.md must document.
var financeObjects = []string{
	"price_book", "price_book_current", "price_timeline",
	"chargeback_daily", "chargeback_monthly", "idle_cost", "queue_wait",
	"unallocated_capacity", "unallocated_by_team", "utilisation_distribution", "capacity", "gpu_daily",
	"chargeback_priced", "chargeback_job_priced", "chargeback_hourly_current", "chargeback_jobs", "chargeback_refreshes", "findings_open",
	"queue_wait_profile", "off_peak",
	"job_failures", "failure_summary", "job_output", "output_summary",
	"chargeback_settings",
}

const (
	rawBegin = "<!-- raw-query:begin"
	rawEnd   = "<!-- raw-query:end -->"
)

// docColumns parses the column tables of docs/finance.md: a "### `name`" heading,
// then a table whose rows start with "| `column` | type |".
func docColumns(doc string) map[string][][2]string {
	heading := regexp.MustCompile("^### `([a-z_]+)`$")
	row := regexp.MustCompile("^\\| `([a-z0-9_]+)` \\| ([^|]+) \\|")
	out := map[string][][2]string{}
	var cur string
	for _, line := range strings.Split(doc, "\n") {
		if m := heading.FindStringSubmatch(line); m != nil {
			cur = m[1]
			out[cur] = nil
			continue
		}
		if strings.HasPrefix(line, "#") {
			cur = ""
		}
		if m := row.FindStringSubmatch(line); m != nil && cur != "" {
			out[cur] = append(out[cur], [2]string{m[1], strings.TrimSpace(m[2])})
		}
	}
	return out
}

// TestFinanceDoc keeps docs/finance.md true: every finance view's columns and
// types as the database has them, and the raw-table query as the code renders it
// (rewritten with -update). The query itself is run in TestFinanceDocRawQuery.
func TestFinanceDoc(t *testing.T) {
	raw, err := os.ReadFile(financeDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	begin, end := strings.Index(doc, rawBegin), strings.Index(doc, rawEnd)
	if begin < 0 || end < begin {
		t.Fatalf("%s: no %q … %q markers around the raw query", financeDoc, rawBegin, rawEnd)
	}
	lineEnd := begin + strings.Index(doc[begin:], "\n") + 1
	want := doc[:lineEnd] + "```sql\n" + RawDailyQuery() + ";\n```\n" + doc[end:]
	if *update && want != doc {
		if err := os.WriteFile(financeDoc, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		doc = want
	}
	if doc != want {
		t.Errorf("%s: the raw query differs from RawDailyQuery(): go test ./analyzer/chargeback -run TestFinanceDoc -update", financeDoc)
	}

	s := openMigrated(t)
	documented := docColumns(doc)
	for _, name := range financeObjects {
		t.Run(name, func(t *testing.T) {
			cols, ok := documented[name]
			if !ok || len(cols) == 0 {
				t.Fatalf("%s has no column table for %s", financeDoc, name)
			}
			res, err := s.Query(t.Context(), "SELECT name, type FROM system.columns WHERE database = currentDatabase() AND table = {t:String} ORDER BY position",
				store.Params{"t": name})
			if err != nil {
				t.Fatal(err)
			}
			var got [][2]string
			for i := range res.Rows {
				n, _ := res.String(i, "name")
				ty, _ := res.String(i, "type")
				got = append(got, [2]string{n, ty})
			}
			if len(got) == 0 {
				t.Fatalf("%s does not exist in the database", name)
			}
			if strings.Join(flat(got), "\n") != strings.Join(flat(cols), "\n") {
				t.Errorf("columns of %s:\ndatabase: %v\ndocs:     %v", name, got, cols)
			}
		})
	}
}

func flat(cols [][2]string) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c[0] + " " + c[1]
	}
	return out
}

// TestFinanceDocRawQuery runs the raw query as printed in docs/finance.md on the
// tiny fleet and compares it with the chargeback_daily view.
func TestFinanceDocRawQuery(t *testing.T) {
	raw, err := os.ReadFile(financeDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	begin := strings.Index(doc, rawBegin)
	if begin < 0 {
		t.Fatalf("%s: no raw query", financeDoc)
	}
	block := doc[begin:]
	q := block[strings.Index(block, "```sql\n")+len("```sql\n"):]
	q = strings.TrimSuffix(strings.TrimSpace(q[:strings.Index(q, "```")]), ";")

	s := openMigrated(t)
	loadTinyFleet(t, s)
	if err := Refresh(t.Context(), s, tinyTo); err != nil {
		t.Fatal(err)
	}
	p := store.Params{"from": timeParam(tinyFrom), "to": timeParam(tinyTo)}
	got := table(t, s, "SELECT * FROM ("+q+") ORDER BY ALL", p)
	want := table(t, s, "SELECT * FROM chargeback_daily WHERE day = '2026-03-01' ORDER BY ALL", nil)
	if got != want {
		t.Errorf("the documented raw query:\n%s\nchargeback_daily:\n%s", got, want)
	}
}
