package console

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/gpupool/gpupool/store"
)

// offSite reports why a Location header would take a browser to another site
// ("" when it stays on this one). Browsers drop tabs and newlines anywhere in a
// URL, leading and trailing spaces and control characters, and read a backslash
// as a slash.
func offSite(loc string) string {
	b := strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return -1
		}
		if r == '\\' {
			return '/'
		}
		return r
	}, loc)
	b = strings.TrimFunc(b, func(r rune) bool { return r <= ' ' })
	switch {
	case !strings.HasPrefix(b, "/"):
		return "not a path on this site"
	case strings.HasPrefix(b, "//"):
		return "a network-path reference (another host)"
	}
	u, err := url.Parse(b)
	if err != nil {
		return "unparsable: " + err.Error()
	}
	if u.Scheme != "" || u.Host != "" {
		return "scheme " + u.Scheme + " host " + u.Host
	}
	return ""
}

// TestAttackLoginRedirect: the login page's next parameter, given in the query
// or posted with the form, never sends a browser to another site.
func TestAttackLoginRedirect(t *testing.T) {
	srv := testConsole(t, simStore(t), nil)
	for _, next := range []string{
		"https://evil.example", "http:evil.example", "//evil.example", "///evil.example", `/\evil.example`, `\\evil.example`,
		`\/evil.example`, "%2F%2Fevil.example", "%2f%2fevil.example", "/%2F%2Fevil.example", "javascript:alert(1)", "JavaScript:alert(1)",
		"data:text/html,x", "/\t/evil.example", "/\n/evil.example", "/\r\n/evil.example", "\t//evil.example", " //evil.example",
		"/\x00/evil.example", `/./\evil.example`, `/../\evil.example`, `/.\evil.example`, `/jobs/../\evil.example`, "/.//evil.example",
		"https:/evil.example", "/\u3000/evil.example", "/\xff/evil.example", "/%09/evil.example", "/@evil.example", "",
	} {
		t.Run(strings.ToValidUTF8(next, "?"), func(t *testing.T) {
			// The form the login page renders carries next on to the POST.
			code, body, _ := get(t, srv, "/login?next="+url.QueryEscape(next), "")
			if code != http.StatusOK {
				t.Fatalf("GET /login: %d", code)
			}
			m := regexp.MustCompile(`name="next" value="([^"]*)"`).FindStringSubmatch(body)
			if m == nil {
				t.Fatalf("login form without next:\n%.600s", body)
			}
			rendered := htmlUnescape(m[1])
			for _, n := range []string{next, rendered} {
				code, _, h := post(t, srv, "/login", "", url.Values{"token": {"tok-vision"}, "next": {n}})
				loc := h.Get("Location")
				if code != http.StatusSeeOther {
					t.Fatalf("POST /login next=%q: %d, want 303", n, code)
				}
				if why := offSite(loc); why != "" {
					t.Errorf("POST /login next=%q: Location %q leaves the site (%s)", n, loc, why)
				}
				if strings.ContainsAny(loc, "\\\t\r\n\x00") {
					t.Errorf("POST /login next=%q: Location %q holds a backslash or a control character", n, loc)
				}
			}
		})
	}
	t.Run("a path on the console is kept", func(t *testing.T) {
		for _, next := range []string{"/jobs?state=running&q=a%5Cb", "/findings/f-1?episode=2", "/fleet"} {
			if code, _, h := post(t, srv, "/login", "", url.Values{"token": {"tok-vision"}, "next": {next}}); code != http.StatusSeeOther || h.Get("Location") != next {
				t.Errorf("next=%q: %d Location %q, want 303 to it", next, code, h.Get("Location"))
			}
		}
	})
}

func htmlUnescape(s string) string {
	return strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">", "&#34;", `"`, "&#39;", "'", "&quot;", `"`, "&#43;", "+").Replace(s)
}

// engineText is what a ClickHouse or chDB exception, or the SQL it names, looks
// like in a response.
var engineText = regexp.MustCompile(`DB::Exception|Code: \d+\.|chdb:|\(CANNOT_[A-Z_]+\)|BAD_QUERY_PARAMETER|query SELECT|SYNTAX_ERROR|Stack trace`)

// hostileFilters are values a user can type into a filter (or a link can carry).
var hostileFilters = []string{
	`x\`, `\`, `\\`, `x\'`, `'`, `x'`, `"`, `%`, `_`, `%_\`, `\N`, `\0`, `\x41`, "a\x00b", "a\tb", "a\nb", "a\rb",
	`') OR 1=1 --`, `{q:String}`, "\xff\xfe", strings.Repeat(`\`, 20001), strings.Repeat("x", 60000) + `\`,
}

// TestAttackConsoleFilters: every filter of every console page, given hostile
// values, answers without a server error and without the engine's text, as a
// fleet-wide reader and as a team; a free-text filter matches literally (200).
func TestAttackConsoleFilters(t *testing.T) {
	s := simStore(t)
	srv := testConsole(t, s, nil)
	visionJob := firstJob(t, s, "team = 'vision'")
	type filter struct {
		path, param string
		literal     bool // free text: answered 200, the value matched as it is
	}
	filters := []filter{
		{"/fleet", "cluster", true}, {"/fleet", "card", true}, {"/fleet", "pool", true}, {"/fleet", "team", true},
		{"/pools", "queue", true},
		{"/jobs", "state", false}, {"/jobs", "team", true}, {"/jobs", "queue", true}, {"/jobs", "q", true},
		{"/jobs/" + escapePath(visionJob), "done", true},
		{"/findings", "state", false}, {"/findings", "kind", false}, {"/findings", "team", true}, {"/findings", "days", false},
		{"/findings/f-none", "episode", false},
		{"/actions", "job", true}, {"/actions", "decision", true}, {"/actions", "team", true}, {"/actions", "pool", true},
		{"/chargeback", "period", false}, {"/chargeback", "at", false},
		{"/chargeback.csv", "period", false}, {"/chargeback.csv", "at", false},
		{"/chargeback.parquet", "period", false}, {"/chargeback.parquet", "at", false},
		{"/capacity", "sort", false}, {"/capacity", "dir", false}, {"/capacity", "per", false},
		{"/login", "next", true}, {"/login", "error", true},
	}
	check := func(t *testing.T, what, path, tok string, literal bool) {
		t.Helper()
		code, body, _ := get(t, srv, path, tok)
		if code >= 500 {
			t.Errorf("%s: %d, want no server error\n%.400s", what, code, body)
		}
		if m := engineText.FindString(body); m != "" {
			t.Errorf("%s: the response carries the engine's text %q\n%.400s", what, m, body)
		}
		if literal && code != http.StatusOK {
			t.Errorf("%s: %d, want 200 (a free-text filter matches the value as it is)", what, code)
		}
	}
	for _, f := range filters {
		t.Run(strings.TrimPrefix(f.path, "/")+"?"+f.param, func(t *testing.T) {
			for _, v := range hostileFilters {
				path := f.path + "?" + url.Values{f.param: {v}}.Encode()
				if strings.Contains(f.path, "?") {
					path = f.path + "&" + url.Values{f.param: {v}}.Encode()
				}
				for _, tok := range []string{"tok-admin", "tok-vision"} {
					// A very long value is not free text anyone types: it may be refused.
					check(t, tok+" "+f.param+"="+short(v), path, tok, f.literal && len(v) < 1000)
				}
			}
		})
	}
	t.Run("path parameters", func(t *testing.T) {
		for _, v := range hostileFilters {
			for _, p := range []string{"/jobs/", "/findings/"} {
				for _, tok := range []string{"tok-admin", "tok-vision"} {
					// No such job or finding: 404, the value matched as it is.
					check(t, tok+" "+p+short(v), p+escapePath(v), tok, false)
				}
			}
		}
	})
	t.Run("a trailing backslash matches literally", func(t *testing.T) {
		code, body, _ := get(t, srv, "/jobs?"+url.Values{"q": {visionJob + `\`}}.Encode(), "tok-admin")
		if code != http.StatusOK || strings.Contains(body, `href="/jobs/`+escapePath(visionJob)+`"`) {
			t.Errorf("jobs?q=%s\\: %d, lists %s: %v (want 200, no job: none ends in a backslash)", visionJob, code, visionJob,
				strings.Contains(body, `href="/jobs/`+escapePath(visionJob)+`"`))
		}
		if code, body, _ := get(t, srv, "/jobs/"+escapePath(visionJob+`\`), "tok-admin"); code != http.StatusNotFound || engineText.MatchString(body) {
			t.Errorf("/jobs/%s\\: %d, want 404 (no such job)\n%.400s", visionJob, code, body)
		}
	})
}

func short(s string) string {
	if len(s) > 24 {
		return strings.ToValidUTF8(s[:12], "?") + "…" + strings.ToValidUTF8(s[len(s)-4:], "?")
	}
	return strings.ToValidUTF8(s, "?")
}

// failingStore is a store whose every query fails as the engine's would.
type failingStore struct{ Store }

const engineSecret = "Code: 62. DB::Exception: Syntax error: failed at position 7 (SECRET_TABLE_NAME) (SYNTAX_ERROR)"

func (failingStore) Query(context.Context, string, store.Params) (*store.Result, error) {
	return nil, errors.New("query SELECT secret FROM t: chdb: " + engineSecret)
}

// TestAttackConsoleHidesEngineErrors: when the store fails, every page and
// download answers a server error that names neither the engine's exception nor
// the query; the log keeps them.
func TestAttackConsoleHidesEngineErrors(t *testing.T) {
	var logged lockedBuffer
	c, err := New(DefaultConfig(), failingStore{simStore(t)}, newGuard(t), WithLogger(slog.New(slog.NewTextHandler(&logged, nil))))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c.Handler())
	t.Cleanup(srv.Close)
	for _, p := range []string{"/fleet", "/jobs", "/jobs/j-1", "/findings", "/findings/f-1", "/actions", "/chargeback",
		"/capacity", "/chargeback.csv", "/chargeback.parquet"} {
		for _, tok := range []string{"tok-admin", "tok-vision"} {
			code, body, _ := get(t, srv, p, tok, "Accept", "text/html")
			if code != http.StatusInternalServerError {
				t.Errorf("%s as %s over a failing store: %d, want 500", p, tok, code)
			}
			if m := engineText.FindString(body); m != "" || strings.Contains(body, "SECRET_TABLE_NAME") {
				t.Errorf("%s as %s: the response carries the engine's text %q\n%.400s", p, tok, m, body)
			}
		}
	}
	if !strings.Contains(logged.String(), "SECRET_TABLE_NAME") {
		t.Errorf("the console's log lacks the engine's error:\n%.1000s", logged.String())
	}
}

// lockedBuffer is a log sink the console's handlers may write to at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
