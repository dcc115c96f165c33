package auth

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// tokenGuard is a guard over a tokens file holding the given name → roles, each
// with the token "tok-<name>".
func tokenGuard(t testing.TB, edit func(*Config), opts []Option, tokens map[string]Role) *Guard {
	t.Helper()
	cfg := DefaultConfig()
	cfg.TokensFile = filepath.Join(t.TempDir(), "tokens")
	var lines []string
	for name, role := range tokens {
		lines = append(lines, TokenEntry{Name: name, Roles: []Role{role}, Hash: HashToken("tok-" + name)}.String())
	}
	if err := os.WriteFile(cfg.TokensFile, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(&cfg)
	}
	g, err := New(t.Context(), cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// echo replies with the caller and the body it read.
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	id, _ := FromContext(r.Context())
	body, _ := io.ReadAll(r.Body)
	_, _ = w.Write([]byte(id.String() + " " + string(body)))
})

// TestGuard: 401 with a JSON error and a Bearer challenge without a valid token,
// 403 from Allow, the identity in the context for the handler, each refusal
// counted by reason.
func TestGuard(t *testing.T) {
	m := NewMetrics(nil)
	g := tokenGuard(t, nil, []Option{WithMetrics(m)}, map[string]Role{"alice": TeamRole("nlp"), "bot": RoleAnalyzer})
	h := g.Handler(g.Allow(AnyRole(RoleAnalyzer, RoleAdmin), echo))
	for _, tc := range []struct {
		name, header string
		status       int
		code, text   string
	}{
		{"no credential", "", 401, "unauthenticated", "no credential: send \"Authorization: Bearer <token>\""},
		{"unknown token", "Bearer tok-mallory", 401, "unauthenticated", "unknown token"},
		{"basic auth", "Basic YWRtaW46YWRtaW4=", 401, "unauthenticated", "want \"Bearer <token>\""},
		{"wrong role", "Bearer tok-alice", 403, "forbidden", "token:alice (team:nlp) may not POST /v1/findings"},
		{"allowed", "Bearer tok-bot", 200, "", "token:bot {}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/v1/findings", strings.NewReader("{}"))
			if tc.header != "" {
				r.Header.Set("Authorization", tc.header)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if tc.code == "" {
				if w.Code != tc.status || w.Body.String() != tc.text {
					t.Fatalf("%d %s, want %d %q", w.Code, w.Body, tc.status, tc.text)
				}
				return
			}
			var e errorBody
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || w.Code != tc.status || e.Code != tc.code ||
				!strings.Contains(e.Error, tc.text) || w.Header().Get("Content-Type") != "application/json" {
				t.Fatalf("%d %s (%v), want %d, code %s, error with %q", w.Code, w.Body, err, tc.status, tc.code, tc.text)
			}
			if tc.status == 401 && w.Header().Get("WWW-Authenticate") != `Bearer realm="gpupool"` {
				t.Errorf("WWW-Authenticate %q", w.Header().Get("WWW-Authenticate"))
			}
		})
	}
	for reason, want := range map[string]float64{ReasonUnauthenticated: 1, ReasonInvalid: 2, ReasonForbidden: 1} {
		if n := testutil.ToFloat64(m.denied.WithLabelValues(reason)); n != want {
			t.Errorf("denied{reason=%s} = %g, want %g", reason, n, want)
		}
	}
	if n := testutil.ToFloat64(m.allowed.WithLabelValues("token")); n != 2 {
		t.Errorf("authenticated{method=token} = %g", n)
	}
}

// TestGuardRateLimit: each identity has its own bucket; past it, 429 with
// Retry-After, and the bucket refills with time.
func TestGuardRateLimit(t *testing.T) {
	clk, m := newFakeClock(), NewMetrics(nil)
	g := tokenGuard(t, func(c *Config) { c.RateLimit, c.RateBurst = 2, 3 }, []Option{WithClock(clk.now), WithMetrics(m)},
		map[string]Role{"alice": TeamRole("nlp"), "ops": RoleOperator})
	h := g.Handler(echo)
	serve := func(tok string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, bearer(tok))
		return w
	}
	for i := range 3 {
		if w := serve("tok-alice"); w.Code != 200 {
			t.Fatalf("request %d: %d", i, w.Code)
		}
	}
	w := serve("tok-alice")
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" || !strings.Contains(w.Body.String(), `"code":"rate_limited"`) {
		t.Fatalf("4th request: %d %s", w.Code, w.Body)
	}
	if w := serve("tok-ops"); w.Code != 200 {
		t.Errorf("another identity is limited too: %d", w.Code)
	}
	clk.add(time.Second)
	if w := serve("tok-alice"); w.Code != 200 {
		t.Errorf("a second later: %d", w.Code)
	}
	if n := testutil.ToFloat64(m.denied.WithLabelValues(ReasonRateLimited)); n != 1 {
		t.Errorf("rate_limited = %g", n)
	}
}

// TestGuardBodyLimit: a body past max_body_bytes gets 413, whether its length is
// announced or not; one within it reaches the handler whole.
func TestGuardBodyLimit(t *testing.T) {
	m := NewMetrics(nil)
	g := tokenGuard(t, func(c *Config) { c.MaxBodyBytes = 10 }, []Option{WithMetrics(m)}, map[string]Role{"ops": RoleOperator})
	h := g.Handler(echo)
	for _, tc := range []struct {
		name   string
		body   io.Reader
		status int
		want   string
	}{
		{"fits", strings.NewReader("0123456789"), 200, "token:ops 0123456789"},
		{"announced", strings.NewReader("0123456789A"), 413, `"code":"too_large"`},
		{"chunked", io.MultiReader(strings.NewReader("01234"), strings.NewReader("567890")), 413, "over 10 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/v1/jobs", tc.body)
			if tc.name == "chunked" {
				r.ContentLength = -1
			}
			r.Header.Set("Authorization", "Bearer tok-ops")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.status || !strings.Contains(w.Body.String(), tc.want) {
				t.Fatalf("%d %s, want %d %q", w.Code, w.Body, tc.status, tc.want)
			}
		})
	}
	if n := testutil.ToFloat64(m.denied.WithLabelValues(ReasonTooLarge)); n != 2 {
		t.Errorf("too_large = %g", n)
	}
}

// TestGuardModeNone: every caller is the anonymous admin, without a tokens file.
func TestGuardModeNone(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Mode = ModeNone
	g, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	g.Handler(g.Allow(AnyRole(RoleAdmin), echo)).ServeHTTP(w, bearer(""))
	if w.Code != 200 || !strings.HasPrefix(w.Body.String(), "none:anonymous") {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
}

// TestGuardNeedsTokensFile: token mode with no tokens file named is refused.
func TestGuardNeedsTokensFile(t *testing.T) {
	if _, err := New(t.Context(), DefaultConfig()); err == nil || !strings.Contains(err.Error(), "tokens_file") {
		t.Fatalf("New = %v", err)
	}
}
