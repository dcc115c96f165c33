package console

import (
	"cmp"
	"errors"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Every list of the console (fleet GPUs, jobs, findings, actions) is sorted
// and paged on the server by one mechanism: the query parameters sort, dir,
// page and per, checked against the table's own list of columns. A column's
// ORDER BY expression is the console's constant text; the request only picks
// one by its key, so nothing a viewer types reaches the SQL but as a bound
// parameter. A bad value is answered 400, naming the parameter and the values
// it takes.
//
// A page with more than one table names each further table's parameters with
// its own prefix (tableDef.prefix: waste_sort, waste_page, …), so that each
// sorts and pages on its own and a link of one keeps the others' order.

// errBadRequest marks a request's own mistake (a parameter out of its range):
// answered 400 with the error's text.
var errBadRequest = errors.New("bad request")

// perPage are the page sizes a table offers; the default is the first.
var perPage = []int{100, 25, 50, 250, 500}

// sortCol is a column a table may be sorted by.
type sortCol struct {
	// Key is its name in the URL (sort=key), Label its header.
	Key, Label string
	// SQL is its ORDER BY expression, for a table read with SQL ("" for one
	// sorted in memory).
	SQL string
	// Num right-aligns the header; numbers and times sort descending first.
	Num, Desc bool
}

// tableDef is one list: its sortable columns and its default order.
type tableDef struct {
	name     string
	cols     []sortCol
	sort     string // default column
	desc     bool   // default direction
	tieBreak string // SQL appended to every ORDER BY, for a stable order across pages
	// prefix names the table's parameters (prefix+"sort", …): "" for a page's
	// main list, a short name and "_" for the page's other tables.
	prefix string
	// id is the table's element id: its links go back to it (#id).
	id string
	// fixed is a table of a fixed, tiny set of rows (the finding kinds):
	// sorted, never paged; it reads no page or per parameter.
	fixed bool
}

// param is the URL name of the table's parameter name (sort, dir, page, per).
func (d *tableDef) param(name string) string { return d.prefix + name }

func (d *tableDef) col(key string) (sortCol, bool) {
	for _, c := range d.cols {
		if c.Key == key {
			return c, true
		}
	}
	return sortCol{}, false
}

func (d *tableDef) keys() []string {
	out := make([]string, 0, len(d.cols))
	for _, c := range d.cols {
		out = append(out, c.Key)
	}
	return out
}

// tableView is a table as one request asks for it, and what the page shows of
// it: its order, its page and the number of rows the filters select.
type tableView struct {
	def       *tableDef
	Sort      string
	Desc      bool
	Page, Per int
	// Total is the number of rows the filters select; Shown those on this page.
	Total, Shown int
	path         string
	query        url.Values
}

// badParam is the 400 of a parameter out of its range.
func badParam(name, value, want string) error {
	return fmt.Errorf("%w: %s %q: want %s", errBadRequest, name, value, want)
}

// parseTable reads sort, dir, page and per of r for table d (each with d's
// prefix).
func parseTable(r *http.Request, d *tableDef) (*tableView, error) {
	q := r.URL.Query()
	tv := &tableView{def: d, Sort: d.sort, Desc: d.desc, Page: 1, Per: perPage[0], path: r.URL.Path, query: q}
	if s := q.Get(d.param("sort")); s != "" {
		c, ok := d.col(s)
		if !ok {
			return nil, badParam(d.param("sort"), s, "one of "+strings.Join(d.keys(), ", "))
		}
		tv.Sort, tv.Desc = c.Key, c.Desc
	}
	switch s := q.Get(d.param("dir")); s {
	case "":
	case "asc":
		tv.Desc = false
	case "desc":
		tv.Desc = true
	default:
		return nil, badParam(d.param("dir"), s, "asc or desc")
	}
	if d.fixed {
		tv.Per = math.MaxInt32
		return tv, nil
	}
	if s := q.Get(d.param("page")); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1_000_000 {
			return nil, badParam(d.param("page"), s, "a whole number from 1")
		}
		tv.Page = n
	}
	if s := q.Get(d.param("per")); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || !slices.Contains(perPage, n) {
			return nil, badParam(d.param("per"), s, "one of "+joinInts(sortedInts(perPage)))
		}
		tv.Per = n
	}
	return tv, nil
}

// parseTables reads the tables of one page, in order; the first bad
// parameter is the error.
func parseTables(r *http.Request, defs ...*tableDef) ([]*tableView, error) {
	out := make([]*tableView, len(defs))
	for i, d := range defs {
		tv, err := parseTable(r, d)
		if err != nil {
			return nil, err
		}
		out[i] = tv
	}
	return out, nil
}

func sortedInts(a []int) []int {
	out := slices.Clone(a)
	slices.Sort(out)
	return out
}

func joinInts(a []int) string {
	s := make([]string, len(a))
	for i, n := range a {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}

// Offset is the number of rows before this page.
func (tv *tableView) Offset() int { return (tv.Page - 1) * tv.Per }

// orderBy is the ORDER BY clause of the chosen column and direction: the
// table's constant text only.
func (tv *tableView) orderBy() string {
	c, _ := tv.def.col(tv.Sort)
	dir := " ASC"
	if tv.Desc {
		dir = " DESC"
	}
	out := c.SQL + dir
	if tv.def.tieBreak != "" {
		out += ", " + tv.def.tieBreak
	}
	return out
}

// limitParams sets {limit:UInt32} and {offset:UInt64} of a paged query.
func (tv *tableView) limitParams(p map[string]string) {
	p["limit"], p["offset"] = strconv.Itoa(tv.Per), strconv.Itoa(tv.Offset())
}

// pageOf sorts rows in memory by the chosen column (cmps holds a comparison for
// every key of the table) and returns this page of them.
func pageOf[T any](tv *tableView, rows []T, cmps map[string]func(a, b T) int) []T {
	by := cmps[tv.Sort]
	slices.SortStableFunc(rows, func(a, b T) int {
		if tv.Desc {
			return by(b, a)
		}
		return by(a, b)
	})
	tv.Total = len(rows)
	from, to := min(tv.Offset(), len(rows)), min(tv.Offset()+tv.Per, len(rows))
	tv.Shown = to - from
	return rows[from:to]
}

// link is the page's URL with the table's parameters changed (set's keys
// without the prefix), back at the table when it has an id.
func (tv *tableView) link(set map[string]string) string {
	q := url.Values{}
	for k, v := range tv.query {
		q[k] = slices.Clone(v)
	}
	for k, v := range set {
		k = tv.def.param(k)
		if v == "" {
			q.Del(k)
		} else {
			q.Set(k, v)
		}
	}
	out := tv.path
	if enc := q.Encode(); enc != "" {
		out += "?" + enc
	}
	if tv.def.id != "" {
		out += "#" + tv.def.id
	}
	return out
}

// Th is the header cell of column key: a link that sorts by it (the other way
// when it is the column sorted by), marked with the direction.
func (tv *tableView) Th(key string) template.HTML {
	c, ok := tv.def.col(key)
	if !ok {
		return template.HTML("<th>" + template.HTMLEscapeString(key) + "</th>")
	}
	desc, mark, aria := c.Desc, "", "none"
	if tv.Sort == key {
		desc = !tv.Desc
		mark, aria = " ▲", "ascending"
		if tv.Desc {
			mark, aria = " ▼", "descending"
		}
	}
	dir := "asc"
	if desc {
		dir = "desc"
	}
	class := ""
	if c.Num {
		class = ` class="n"`
	}
	href := tv.link(map[string]string{"sort": key, "dir": dir, "page": ""})
	return template.HTML(fmt.Sprintf(`<th%s aria-sort="%s"><a class="sort" data-sort="%s" href="%s">%s%s</a></th>`, class, aria,
		template.HTMLEscapeString(key), template.HTMLEscapeString(href), template.HTMLEscapeString(c.Label), mark))
}

// ID is the table's element id.
func (tv *tableView) ID() string { return tv.def.id }

// Pages is the number of pages.
func (tv *tableView) Pages() int { return max(1, (tv.Total+tv.Per-1)/tv.Per) }

// Pager is the line above and below a table: the rows shown of how many
// ("101–200 of 681"), previous and next pages, and the page size.
func (tv *tableView) Pager() template.HTML {
	var b strings.Builder
	from, to := tv.Offset()+1, tv.Offset()+tv.Shown
	if tv.Shown == 0 {
		from = 0
	}
	fmt.Fprintf(&b, `<div class="pager" data-table="%s" data-total="%d" data-from="%d" data-to="%d">`, tv.def.name, tv.Total, from, to)
	fmt.Fprintf(&b, `<span class="count"><b>%s</b> of <b class="total">%s</b></span>`, rangeText(from, to), thousands(tv.Total))
	if tv.Page > 1 {
		fmt.Fprintf(&b, ` <a class="prev" href="%s">← previous</a>`, template.HTMLEscapeString(tv.link(map[string]string{"page": strconv.Itoa(tv.Page - 1)})))
	}
	if tv.Page < tv.Pages() {
		fmt.Fprintf(&b, ` <a class="next" href="%s">next →</a>`, template.HTMLEscapeString(tv.link(map[string]string{"page": strconv.Itoa(tv.Page + 1)})))
	}
	if tv.Pages() > 1 {
		fmt.Fprintf(&b, ` <span class="muted">page %d of %d</span>`, tv.Page, tv.Pages())
	}
	b.WriteString(` <span class="per">per page:`)
	for _, n := range sortedInts(perPage) {
		if n == tv.Per {
			fmt.Fprintf(&b, ` <b>%d</b>`, n)
		} else {
			fmt.Fprintf(&b, ` <a href="%s">%d</a>`, template.HTMLEscapeString(tv.link(map[string]string{"per": strconv.Itoa(n), "page": ""})), n)
		}
	}
	b.WriteString(`</span></div>`)
	return template.HTML(b.String())
}

func rangeText(from, to int) string {
	if from == 0 {
		return "0"
	}
	return thousands(from) + "–" + thousands(to)
}

// thousands writes n with thousands separators (681, 1,024).
func thousands(n int) string {
	s := strconv.Itoa(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// Comparisons for pageOf.
func byStr[T any](f func(T) string) func(a, b T) int {
	return func(a, b T) int { return cmp.Compare(f(a), f(b)) }
}

func byNum[T any, N cmp.Ordered](f func(T) N) func(a, b T) int {
	return func(a, b T) int { return cmp.Compare(f(a), f(b)) }
}

// withChoice is a select's choices with the value asked for among them (a
// shared link may name a value no row has yet), so that the select shows the
// filter that applies.
func withChoice(choices []string, v string) []string {
	if v == "" || slices.Contains(choices, v) {
		return choices
	}
	return append(choices, v)
}
