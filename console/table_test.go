package console

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestTableParams(t *testing.T) {
	parse := func(query string) (*tableView, error) {
		return parseTable(httptest.NewRequest(http.MethodGet, "/jobs?"+query, nil), jobsTable)
	}
	tv, err := parse("")
	if err != nil || tv.Sort != "state" || tv.Desc || tv.Page != 1 || tv.Per != 100 {
		t.Fatalf("defaults: %+v, %v; want state ascending, page 1 of 100", tv, err)
	}
	tv, err = parse("sort=waited&page=3&per=25")
	if err != nil || tv.Sort != "waited" || !tv.Desc || tv.Offset() != 50 {
		t.Fatalf("sort=waited&page=3&per=25: %+v, %v; want waited descending (its default), offset 50", tv, err)
	}
	if got := tv.orderBy(); !strings.HasPrefix(got, "dateDiff('second', submit_time") || !strings.Contains(got, " DESC, coalesce(") {
		t.Errorf("orderBy: %q, want the waited column's expression, descending, then the tie-break", got)
	}
	if tv, _ := parse("sort=job&dir=desc"); tv.orderBy() != "job DESC, coalesce(end_time, start_time, submit_time) DESC, job" {
		t.Errorf("sort=job&dir=desc: %q", tv.orderBy())
	}
	for _, c := range []struct{ query, param, valid string }{
		{"sort=job%3BDROP%20TABLE%20jobs", "sort", "job, team, queue, card, state, submitted, waited, ran"},
		{"sort=JOB", "sort", "job, team"},
		{"sort=cost", "sort", "one of job"},
		{"dir=up", "dir", "asc or desc"},
		{"page=0", "page", "from 1"},
		{"page=-2", "page", "from 1"},
		{"page=two", "page", "from 1"},
		{"per=7", "per", "25, 50, 100, 250, 500"},
		{"per=100000", "per", "25, 50, 100, 250, 500"},
	} {
		_, err := parse(c.query)
		if err == nil {
			t.Errorf("%s: accepted", c.query)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, c.param+` "`) || !strings.Contains(msg, c.valid) {
			t.Errorf("%s: %q, want the parameter %s and its valid values (%s)", c.query, msg, c.param, c.valid)
		}
	}
}

func TestPageOf(t *testing.T) {
	rows := []int{5, 3, 9, 1, 7, 2}
	cmps := map[string]func(a, b int) int{"n": byNum(func(v int) int { return v })}
	def := &tableDef{name: "t", sort: "n", cols: []sortCol{{Key: "n", Label: "N"}}}
	tv, err := parseTable(httptest.NewRequest(http.MethodGet, "/t?dir=desc&page=2&per=25", nil), def)
	if err != nil {
		t.Fatal(err)
	}
	if got := pageOf(tv, rows, cmps); len(got) != 0 || tv.Total != 6 || tv.Shown != 0 {
		t.Errorf("page 2 of 6 rows by 25: %v, total %d shown %d", got, tv.Total, tv.Shown)
	}
	tv.Page = 1
	if got := pageOf(tv, rows, cmps); strconv.Itoa(got[0])+strconv.Itoa(got[5]) != "91" || tv.Shown != 6 {
		t.Errorf("descending: %v", got)
	}
	pager := string(tv.Pager())
	if !strings.Contains(pager, "<b>1–6</b> of <b class=\"total\">6</b>") || strings.Contains(pager, "next") {
		t.Errorf("pager: %s", pager)
	}
	if got := thousands(681) + " " + thousands(1024) + " " + thousands(1234567); got != "681 1,024 1,234,567" {
		t.Errorf("thousands: %s", got)
	}
}

func TestTimeRange(t *testing.T) {
	now := simStart.Add(simSpan)
	for _, c := range []struct {
		query, label string
		bad          bool
	}{
		{"", "the last 30 days", false}, {"range=7d", "the last 7 days", false}, {"range=all", "all time", false},
		{"range=1w", "", true}, {"range=7d%27", "", true},
	} {
		w, err := pageWindow(httptest.NewRequest(http.MethodGet, "/findings?"+c.query, nil), now, 30*24*60*60*1e9)
		switch {
		case c.bad && (err == nil || !strings.Contains(err.Error(), "range") || !strings.Contains(err.Error(), "1h, 6h, 24h, 7d, 30d, 90d, all")):
			t.Errorf("%s: %v, want a 400 naming range and its values", c.query, err)
		case !c.bad && (err != nil || w.Label != c.label):
			t.Errorf("%s: %q, %v; want %q", c.query, w.Label, err, c.label)
		}
	}
}

// TestTableParamsOverHTTP: a bad sort, dir, page, per or range on every list
// answers 400 naming the parameter and its valid values, for every reader;
// the same parameters without a token are 401 and for a role that reads
// nothing 403; and a team sorted and paged sees its own rows only, counted as
// SQL counts them.
func TestTableParamsOverHTTP(t *testing.T) {
	s := simStore(t)
	srv := testConsole(t, s, newScheduler(t))
	lists := []string{"/fleet", "/jobs", "/findings", "/actions", "/chargeback?period=day&at=2026-11-30"}
	bad := map[string]string{"sort": "nope", "dir": "sideways", "page": "0", "per": "3", "range": "forever"}
	for _, l := range lists {
		for param, v := range bad {
			for _, tok := range []string{"tok-admin", "tok-vision", "tok-finance"} {
				code, body, _ := get(t, srv, join(l, param+"="+v), tok)
				if code != http.StatusBadRequest || !strings.Contains(body, param+` &#34;`+v) || !strings.Contains(body, "want ") {
					t.Errorf("%s?%s=%s as %s: %d, want 400 naming %s and its values\n%.300s", l, param, v, tok, code, param, body)
				}
			}
		}
		q := join(l, "sort=name&dir=desc&page=1&per=25&range=30d")
		if !strings.HasPrefix(l, "/chargeback") {
			q = join(l, "sort=team&dir=desc&page=1&per=25&range=30d")
		}
		if code, _, _ := get(t, srv, q, ""); code != http.StatusUnauthorized {
			t.Errorf("%s without a token: %d, want 401", q, code)
		}
		if code, _, _ := get(t, srv, q, "tok-agent"); code != http.StatusForbidden {
			t.Errorf("%s as agent: %d, want 403", q, code)
		}
		if code, _, _ := get(t, srv, q, "tok-wrong"); code != http.StatusUnauthorized {
			t.Errorf("%s with an unknown token: %d, want 401", q, code)
		}
	}
	// The chargeback's breakdowns sorted by GPU-hours, most first.
	_, body, _ := get(t, srv, "/chargeback?period=day&at=2026-11-30&sort=gpu_hours&dir=desc", "tok-admin")
	byTeam := body[strings.Index(body, `id="by-team"`):]
	byTeam = byTeam[:strings.Index(byTeam, "</table>")]
	var hours []float64
	for _, m := range regexp.MustCompile(`class="n gpu-hours">([0-9.]+)<`).FindAllStringSubmatch(byTeam, -1) {
		h, _ := strconv.ParseFloat(m[1], 64)
		hours = append(hours, h)
	}
	if len(hours) < 2 {
		t.Errorf("chargeback by team: %d rows", len(hours))
	}
	for i := 1; i < len(hours); i++ {
		if hours[i] > hours[i-1] {
			t.Errorf("chargeback by team sorted by GPU-hours, most first: %v", hours)
			break
		}
	}
	total := regexp.MustCompile(`data-total="(\d+)"`)
	teamOf := regexp.MustCompile(`data-team="([^"]*)"`)
	for _, c := range []struct{ path, sql string }{
		{"/jobs?sort=team&dir=desc&per=500", "SELECT count() FROM jobs WHERE team = 'vision'"},
		{"/actions?sort=team&per=500", "SELECT uniqExact(id) FROM actions WHERE team = 'vision'"},
	} {
		code, body, _ := get(t, srv, c.path, "tok-vision")
		if code != http.StatusOK {
			t.Fatalf("%s as vision: %d", c.path, code)
		}
		m := total.FindStringSubmatch(body)
		if want := sqlText(t, s, c.sql); m == nil || m[1] != want {
			t.Errorf("%s as vision: total %v, SQL counts %s", c.path, m, want)
		}
		for _, tm := range teamOf.FindAllStringSubmatch(body, -1) {
			if tm[1] != "vision" {
				t.Errorf("%s as vision lists a row of team %s", c.path, tm[1])
			}
		}
	}
}

// join adds a query to a path that may have one.
func join(path, query string) string {
	if strings.Contains(path, "?") {
		return path + "&" + query
	}
	return path + "?" + query
}

// TestTablePrefix: two tables of one page read their own parameters, a bad one
// names its prefixed parameter, and a table's links keep the other table's
// order and come back to the table.
func TestTablePrefix(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "/chargeback?sort=cost&waste_sort=job&waste_dir=asc&waste_page=2&waste_per=25", nil)
	tvs, err := parseTables(r, linesTable, wasteTable)
	if err != nil {
		t.Fatal(err)
	}
	if lines, waste := tvs[0], tvs[1]; lines.Sort != "cost" || !lines.Desc || lines.Page != 1 || waste.Sort != "job" || waste.Desc || waste.Offset() != 25 {
		t.Errorf("lines %+v, waste %+v", lines, waste)
	}
	th := string(tvs[1].Th("idle"))
	if !strings.Contains(th, "waste_sort=idle") || !strings.Contains(th, "sort=cost") || strings.Contains(th, "waste_page") || !strings.Contains(th, "#top-waste") {
		t.Errorf("waste's idle header: %s; want waste_sort=idle, the lines' sort=cost kept, no waste_page, back at #top-waste", th)
	}
	_, err = parseTables(httptest.NewRequest(http.MethodGet, "/chargeback?wait_sort=name", nil), linesTable, wasteTable, waitTable)
	if err == nil || !strings.Contains(err.Error(), `wait_sort "name"`) || !strings.Contains(err.Error(), "team, pool, jobs, p50, p95, queued") {
		t.Errorf("wait_sort=name: %v, want a 400 naming wait_sort and its values", err)
	}
	tv, err := parseTable(httptest.NewRequest(http.MethodGet, "/findings?kinds_sort=open&kinds_page=9&kinds_per=7", nil), kindsTable)
	if err != nil || tv.Sort != "open" || !tv.Desc || tv.Offset() != 0 {
		t.Errorf("kinds (fixed: no page, no per): %+v, %v", tv, err)
	}
}
