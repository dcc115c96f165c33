package console

import (
	"cmp"
	"html"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// smallTable is one of a page's further tables (not its main list), as the
// tests read it: its page, its definition and the number of rows the fixture
// has for it (want, asked for once the console is up).
type smallTable struct {
	page string
	def  *tableDef
	want func() int
	// one: the fixture has a single row for it (its columns' order is tested
	// on another page's table of the same definition); only its pager and a
	// bad sort value are checked.
	one bool
	// get reads the page (nil: the test's console over the simulated store).
	get func(path string) (int, string)
}

var (
	thRe      = regexp.MustCompile(`(?s)<th[^>]*>(.*?)</th>`)
	sortRe    = regexp.MustCompile(`data-sort="([^"]+)"`)
	trRe      = regexp.MustCompile(`(?s)<tr[^>]*>(.*?)</tr>`)
	tdRe      = regexp.MustCompile(`(?s)<td[^>]*>(.*?)</td>`)
	tagRe     = regexp.MustCompile(`<[^>]+>`)
	summaryRe = regexp.MustCompile(`(?s)<summary[^>]*>(.*?)</summary>`)
	numRe     = regexp.MustCompile(`^-?[0-9][0-9,]*(\.[0-9]+)?$`)
	timesRe   = regexp.MustCompile(`^([0-9]+) × `)
	// currencyRe is a money cell's currency code ("12.65 USD").
	currencyRe = regexp.MustCompile(` [A-Z]{3}$`)
)

// tableHTML is the table with this id on the page ("" if none).
func tableHTML(body, id string) string {
	return regexp.MustCompile(`(?s)<table[^>]* id="` + regexp.QuoteMeta(id) + `"[^>]*>.*?</table>`).FindString(body)
}

// columnOf is the text of column key's cells, row by row (rows without a td,
// such as a totals row, left out), and whether the header has that column.
func columnOf(table, key string) ([]string, bool) {
	head, body, _ := strings.Cut(table, "<tbody>")
	idx := -1
	for i, th := range thRe.FindAllStringSubmatch(head, -1) {
		if m := sortRe.FindStringSubmatch(th[1]); m != nil && m[1] == key {
			idx = i
		}
	}
	if idx < 0 {
		return nil, false
	}
	var out []string
	for _, tr := range trRe.FindAllStringSubmatch(body, -1) {
		tds := tdRe.FindAllStringSubmatch(tr[1], -1)
		if len(tds) > idx {
			cell := tds[idx][1]
			if m := summaryRe.FindStringSubmatch(cell); m != nil {
				cell = m[1] // what the cell shows; the rest opens on a click
			}
			out = append(out, strings.TrimSpace(html.UnescapeString(tagRe.ReplaceAllString(cell, ""))))
		}
	}
	return out, true
}

// cellValue reads a cell as the number it shows ("1,024", "12.65 USD", "45%",
// "2 × H100"; "–" is none, below every number) or else as its text.
func cellValue(s string) (float64, string, bool) {
	if s == "–" || s == "" {
		return math.Inf(-1), "", true
	}
	if m := timesRe.FindStringSubmatch(s); m != nil {
		n, _ := strconv.ParseFloat(m[1], 64)
		return n, "", true
	}
	t := strings.TrimRight(strings.TrimLeft(currencyRe.ReplaceAllString(s, ""), "$€£+ "), "% ")
	if numRe.MatchString(t) {
		n, _ := strconv.ParseFloat(strings.ReplaceAll(t, ",", ""), 64)
		return n, "", true
	}
	return 0, s, false
}

func compareCells(a, b string) int {
	x, xs, xn := cellValue(a)
	y, ys, yn := cellValue(b)
	if xn && yn {
		return cmp.Compare(x, y)
	}
	if a == "–" {
		a = ""
	}
	if b == "–" {
		b = ""
	}
	if xn != yn {
		return cmp.Compare(a, b)
	}
	return cmp.Compare(xs, ys)
}

// ordered reports the first pair of cells out of order (sign 1: ascending,
// -1: descending), or -1.
func ordered(cells []string, sign int) int {
	for i := 1; i < len(cells); i++ {
		if sign*compareCells(cells[i-1], cells[i]) > 0 {
			return i
		}
	}
	return -1
}

// checkSmallTable sorts the table by each of its columns both ways and checks
// the rows' order, pages it by 25 and checks the pager's count, and asks for
// a bad sort value (400 naming the parameter and its values).
func checkSmallTable(t *testing.T, get func(path string) (int, string), st smallTable) {
	t.Helper()
	d := st.def
	want := st.want()
	if (want < 2) != st.one {
		t.Fatalf("%s #%s: the fixture has %d rows; the test needs two or more (one: %v)", st.page, d.id, want, st.one)
	}
	varied := st.one
	for _, c := range d.cols {
		if st.one {
			break
		}
		var asc []string
		for _, dir := range []string{"asc", "desc"} {
			path := join(st.page, d.param("sort")+"="+c.Key+"&"+d.param("dir")+"="+dir)
			code, body := get(path)
			if code != http.StatusOK {
				t.Fatalf("%s: %d\n%.300s", path, code, body)
			}
			cells, ok := columnOf(tableHTML(body, d.id), c.Key)
			if !ok || len(cells) != min(want, perPage[0]) {
				t.Errorf("%s: #%s has %d rows (header %v), want %d", path, d.id, len(cells), ok, min(want, perPage[0]))
				continue
			}
			sign := 1
			if dir == "desc" {
				sign = -1
			}
			if i := ordered(cells, sign); i >= 0 {
				t.Errorf("%s: #%s's %s out of order at row %d: %q then %q", path, d.id, c.Key, i, cells[i-1], cells[i])
			}
			if dir == "asc" {
				asc = cells
			} else if len(asc) > 0 && compareCells(asc[0], asc[len(asc)-1]) != 0 {
				varied = true
				if compareCells(asc[0], cells[len(cells)-1]) != 0 {
					t.Errorf("%s: #%s's first %s ascending is %q, last descending %q", path, d.id, c.Key, asc[0], cells[len(cells)-1])
				}
			}
		}
	}
	if !varied {
		t.Errorf("%s #%s: no column has two different values; the sort is not tested", st.page, d.id)
	}
	bad := join(st.page, d.param("sort")+"=nope")
	if code, body := get(bad); code != http.StatusBadRequest || !strings.Contains(body, d.param("sort")+` &#34;nope`) ||
		!strings.Contains(body, strings.Join(d.keys(), ", ")) {
		t.Errorf("%s: %d, want 400 naming %s and its values\n%.300s", bad, code, d.param("sort"), body)
	}
	if d.fixed {
		if code, body := get(st.page); code != http.StatusOK || strings.Contains(body, `data-table="`+d.name+`"`) {
			t.Errorf("%s: %d; #%s is fixed and has no pager", st.page, code, d.id)
		}
		return
	}
	checkPager(t, get, st, want)
}

var pagerRe = regexp.MustCompile(`data-table="([^"]+)" data-total="(\d+)" data-from="(\d+)" data-to="(\d+)"`)

// checkPager pages the table by 25 (the last page when there are more) and
// checks "N–M of K" against the fixture's count.
func checkPager(t *testing.T, get func(path string) (int, string), st smallTable, want int) {
	t.Helper()
	d := st.def
	page := (want-1)/25 + 1
	path := join(st.page, d.param("per")+"=25&"+d.param("page")+"="+strconv.Itoa(page))
	code, body := get(path)
	if code != http.StatusOK {
		t.Fatalf("%s: %d", path, code)
	}
	from, to := (page-1)*25+1, want
	text := thousands(from) + "–" + thousands(to) + "</b> of <b class=\"total\">" + thousands(want) + "<"
	found := false
	for _, m := range pagerRe.FindAllStringSubmatch(body, -1) {
		if m[1] == d.name {
			found = true
			if m[2] != strconv.Itoa(want) || m[3] != strconv.Itoa(from) || m[4] != strconv.Itoa(to) {
				t.Errorf("%s: #%s's pager says %s–%s of %s, want %d–%d of %d", path, d.id, m[3], m[4], m[2], from, to, want)
			}
		}
	}
	if !found || !strings.Contains(body, text) {
		t.Errorf("%s: no pager of #%s saying %q", path, d.id, text)
	}
	if cells, _ := columnOf(tableHTML(body, d.id), d.sort); len(cells) != to-from+1 {
		t.Errorf("%s: #%s shows %d rows, the pager %d–%d", path, d.id, len(cells), from, to)
	}
}

// TestSmallTablesSortAndPage: every further table of a page sorts by each of
// its columns both ways, pages with the count of the fixture's rows and
// answers a bad sort value 400 naming its parameter.
func TestSmallTablesSortAndPage(t *testing.T) {
	s := simStore(t)
	srv := testConsole(t, s, newScheduler(t))
	admin := func(path string) (int, string) {
		code, body, _ := get(t, srv, path, "tok-admin")
		return code, body
	}
	const day = "/chargeback?period=day&at=2026-11-30"
	// The capacity page over eight weeks of history (historySeries: four
	// cluster and card types to forecast).
	hs, _ := newHistoryStore(t)
	histSrv := testConsole(t, hs, nil)
	hist := func(path string) (int, string) {
		code, body, _ := get(t, histSrv, path, "tok-admin")
		return code, body
	}
	rep := func() *billingCounts { return chargebackCounts(t, admin) }
	count := func(sql string) func() int {
		return func() int { n, _ := strconv.Atoi(sqlText(t, s, sql)); return n }
	}
	sched := newScheduler(t)
	model, err := sched.Model(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	queues, err := sched.Queues(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	const window = "hour >= toStartOfHour(toDateTime('2026-11-30 16:00:00')) - INTERVAL 23 HOUR"
	job := sqlText(t, s, `SELECT job FROM actions WHERE job != '' GROUP BY job ORDER BY uniqExact(id) DESC, job LIMIT 1`)
	jobAct := "job = '" + job + "' OR startsWith(job, '" + job + "/')"
	fid := sqlText(t, s, `SELECT id FROM findings GROUP BY id ORDER BY uniqExact(episode) DESC, id LIMIT 1`)
	fep := sqlText(t, s, "SELECT argMax(episode, last_seen) FROM findings WHERE id = '"+fid+"'")
	for _, st := range []smallTable{
		{page: day, def: wasteTable, want: func() int { return rep().waste }},
		{page: day, def: waitTable, want: func() int { return rep().waits }},
		{page: "/fleet", def: cardsTable, want: count("SELECT uniqExact(card) FROM gpu_hour WHERE " + window)},
		{page: "/findings?state=all&range=all", def: kindsTable, want: count("SELECT uniqExact(kind) FROM findings")},
		{page: "/pools", def: poolsTable, want: func() int { return len(model.Pools) }},
		{page: "/pools", def: queuesTable, want: func() int { return len(queues) }},
		{page: "/pools?range=all", def: waitsTable, want: count("SELECT count() FROM (SELECT DISTINCT queue, pool FROM queue_wait)")},
		{page: "/capacity", def: capacityTable, want: func() int { return 4 }, get: hist},
		{page: "/jobs/" + escapePath(job), def: jobFindingsTable, want: count("SELECT count() FROM (SELECT DISTINCT id, episode FROM findings WHERE job = '" + job + "')")},
		{page: "/jobs/" + escapePath(job), def: jobActionsTable, want: count("SELECT uniqExact(id) FROM actions WHERE " + jobAct)},
		{page: "/findings/" + fid, def: episodesTable, want: count("SELECT uniqExact(episode) FROM findings WHERE id = '" + fid + "'")},
		{page: "/findings/" + fid, def: findingActionsTable, one: true,
			want: count("SELECT uniqExact(id) FROM actions WHERE finding_id = '" + fid + "' AND finding_episode IN (0, " + fep + ")")},
	} {
		get := admin
		if st.get != nil {
			get = st.get
		}
		t.Run(st.def.name, func(t *testing.T) { checkSmallTable(t, get, st) })
	}
}

type billingCounts struct{ waste, waits int }

// chargebackCounts is the number of most idle jobs and queue waits the day's
// JSON report has.
func chargebackCounts(t *testing.T, get func(path string) (int, string)) *billingCounts {
	r := fleetReport(t, func(path, _ string) (int, string) { return get(path) })
	return &billingCounts{waste: len(r.TopWaste), waits: len(r.QueueWait)}
}

// TestSmallTablesAccess: a page's further tables' parameters without a token
// (or with an unknown one) are 401 and for a role that reads nothing 403; a
// bad value is 400 for every reader; and team:vision's most idle jobs and
// queue waits, sorted and paged, are its own rows only, as many as its own
// report has.
func TestSmallTablesAccess(t *testing.T) {
	s := simStore(t)
	srv := testConsole(t, s, newScheduler(t))
	const day = "/chargeback?period=day&at=2026-11-30"
	job := firstJob(t, s, "team = 'vision'")
	for _, c := range []struct {
		page string
		def  *tableDef
	}{
		{day, wasteTable}, {day, waitTable}, {"/fleet", cardsTable}, {"/findings", kindsTable},
		{"/pools", poolsTable}, {"/pools", queuesTable}, {"/pools", waitsTable}, {"/capacity", capacityTable},
		{"/jobs/" + escapePath(job), jobFindingsTable}, {"/jobs/" + escapePath(job), jobActionsTable},
	} {
		d := c.def
		q := sortedPagedQuery(c.page, d)
		checkDeniedReaders(t, srv, q)
		for _, tok := range []string{"tok-admin", "tok-vision", "tok-finance"} {
			if strings.HasPrefix(c.page, "/jobs/") && tok == "tok-finance" {
				continue // finance reads no job
			}
			bad := join(c.page, d.param("dir")+"=up")
			if code, body, _ := get(t, srv, bad, tok); code != http.StatusBadRequest || !strings.Contains(body, d.param("dir")+` &#34;up`) {
				t.Errorf("%s as %s: %d, want 400 naming %s\n%.300s", bad, tok, code, d.param("dir"), body)
			}
		}
	}
	vision := func(path string) (int, string) {
		code, body, _ := get(t, srv, path, "tok-vision")
		return code, body
	}
	own := fleetReport(t, func(path, _ string) (int, string) { return vision(path) })
	teamOf := regexp.MustCompile(`data-team="([^"]*)"`)
	for _, c := range []struct {
		def  *tableDef
		want int
	}{{wasteTable, len(own.TopWaste)}, {waitTable, len(own.QueueWait)}} {
		if c.want == 0 {
			t.Fatalf("#%s: vision's report has no row; the test needs one", c.def.id)
		}
		path := join(day, c.def.param("sort")+"=team&"+c.def.param("per")+"=25")
		code, body := vision(path)
		if code != http.StatusOK {
			t.Fatalf("%s as vision: %d", path, code)
		}
		table := tableHTML(body, c.def.id)
		rows := teamOf.FindAllStringSubmatch(table, -1)
		for _, m := range rows {
			if m[1] != "vision" {
				t.Errorf("%s as vision lists a row of team %s", path, m[1])
			}
		}
		if len(rows) != c.want || !strings.Contains(body, `data-table="`+c.def.name+`" data-total="`+strconv.Itoa(c.want)+`"`) {
			t.Errorf("%s as vision: %d rows, want vision's %d, counted by the pager", path, len(rows), c.want)
		}
	}
}

// sortedPagedQuery is page with d sorted by its first column, descending, and
// (unless d is fixed) its first page of 25.
func sortedPagedQuery(page string, d *tableDef) string {
	q := join(page, d.param("sort")+"="+d.cols[0].Key+"&"+d.param("dir")+"=desc")
	if !d.fixed {
		q += "&" + d.param("page") + "=1&" + d.param("per") + "=25"
	}
	return q
}

// checkDeniedReaders: q is 401 without a token or with an unknown one, and 403
// for the agent role.
func checkDeniedReaders(t *testing.T, srv *httptest.Server, q string) {
	t.Helper()
	for tok, want := range map[string]int{"": http.StatusUnauthorized, "tok-wrong": http.StatusUnauthorized, "tok-agent": http.StatusForbidden} {
		if code, _, _ := get(t, srv, q, tok); code != want {
			t.Errorf("%s with token %q: %d, want %d", q, tok, code, want)
		}
	}
}
