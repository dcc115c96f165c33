package auth

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)} }

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// bearer is a request carrying tok.
func bearer(tok string) *http.Request {
	r := httptest.NewRequest("GET", "/v1/queues", nil)
	if tok != "" {
		r.Header.Set("Authorization", "Bearer "+tok)
	}
	return r
}

// TestParseTokens reads the file format and names the line of each mistake.
func TestParseTokens(t *testing.T) {
	h1, h2 := HashToken("one"), HashToken("two")
	good := "# comment\n\nalice team:nlp,team:vision " + h1 + "\n  ops   operator   " + h2 + "  \n"
	es, err := ParseTokens([]byte(good))
	if err != nil || len(es) != 2 || es[0].Name != "alice" || len(es[0].Roles) != 2 || es[1].Roles[0] != RoleOperator || es[1].Hash != h2 {
		t.Fatalf("ParseTokens = %+v, %v", es, err)
	}
	if got := es[0].String(); got != "alice team:nlp,team:vision "+h1 {
		t.Errorf("String() = %q", got)
	}
	exp, err := ParseTokens([]byte("ci team:vision " + h1 + " expires=2026-12-31T01:00:00+01:00\n"))
	if err != nil || len(exp) != 1 || !exp[0].Expires.Equal(time.Date(2026, 12, 31, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("a line with expires=: %+v, %v", exp, err)
	}
	if got := exp[0].String(); got != "ci team:vision "+h1+" expires=2026-12-31T00:00:00Z" {
		t.Errorf("String() = %q", got)
	}
	for _, tc := range []struct{ name, body, want string }{
		{"two fields", "alice admin\n", "line 1: 2 fields"},
		{"fourth field not expires", "alice admin " + h1 + " soon", `line 1: fourth field "soon": want expires=`},
		{"expiry not RFC 3339", "alice admin " + h1 + " expires=2026-12-31", "line 1: expires=2026-12-31: want an RFC 3339 time"},
		{"five fields", "alice admin " + h1 + " expires=2026-12-31T00:00:00Z x", "line 1: 5 fields, want 3 or 4"},
		{"bad name", "al/ice admin " + h1, "line 1: name"},
		{"bad role", "\nalice root " + h1, "line 2: role \"root\""},
		{"clear text token", "alice admin gpupool_abc", "line 1: hash"},
		{"upper-case hash", "alice admin " + strings.ToUpper(h1), "line 1: hash"},
		{"same name", "a admin " + h1 + "\na finance " + h2, "line 2: name \"a\" is already on line 1"},
		{"same token", "a admin " + h1 + "\nb finance " + h1, "line 2: the same token as line 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParseTokens([]byte(tc.body)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParseTokens = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestNewToken: random, prefixed, and the hash is SHA-256 hex.
func TestNewToken(t *testing.T) {
	a, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewToken()
	if a == b || !strings.HasPrefix(a, TokenPrefix) || len(a) != len(TokenPrefix)+43 {
		t.Errorf("tokens %q %q", a, b)
	}
	if got := HashToken("abc"); got != "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Errorf("HashToken = %s", got)
	}
}

// TestTokenFileReload: a token added, rotated or revoked by editing the file
// takes effect on the next check a second later, without a restart; a broken
// edit keeps the tokens read before.
func TestTokenFileReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	write := func(body string) {
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("alice team:nlp " + HashToken("tok-alice") + "\n")
	clk, m := newFakeClock(), NewMetrics(nil)
	tf, err := NewTokenFile(path, WithClock(clk.now), WithMetrics(m))
	if err != nil {
		t.Fatal(err)
	}
	check := func(tok, wantName string) {
		t.Helper()
		id, err := tf.Authenticate(bearer(tok))
		if wantName == "" {
			if !errors.Is(err, ErrInvalidCredential) {
				t.Errorf("%s: %+v, %v; want refused", tok, id, err)
			}
			return
		}
		if err != nil || id.Name != wantName || id.Method != "token" {
			t.Errorf("%s: %+v, %v; want %s", tok, id, err, wantName)
		}
	}
	check("tok-alice", "alice")
	check("tok-bob", "")
	if _, err := tf.Authenticate(bearer("")); !errors.Is(err, ErrNoCredential) {
		t.Errorf("no header: %v", err)
	}
	// Rotate alice, add bob.
	write("alice team:nlp " + HashToken("tok-alice-2") + "\nbob finance " + HashToken("tok-bob") + "\n")
	check("tok-alice", "alice") // within the second: not looked at yet
	clk.add(time.Second)
	check("tok-alice", "")
	check("tok-alice-2", "alice")
	check("tok-bob", "bob")
	// A broken edit: the old tokens hold, and it is counted.
	write("bob finance\n")
	clk.add(time.Second)
	check("tok-bob", "bob")
	if n := testutil.ToFloat64(m.reloads.WithLabelValues("error")); n != 1 {
		t.Errorf("reload errors = %g", n)
	}
	// Revoke bob: delete his line.
	write("alice team:nlp " + HashToken("tok-alice-2") + "\n")
	clk.add(time.Second)
	check("tok-bob", "")
	check("tok-alice-2", "alice")
	if n := testutil.ToFloat64(m.tokens); n != 1 {
		t.Errorf("tokens gauge = %g", n)
	}
	// Removed altogether: no token holds.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	clk.add(time.Second)
	check("tok-alice-2", "")
}

// TestTokenFileRefusesBadFile: a tokens file that does not parse stops the start.
func TestTokenFileRefusesBadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(path, []byte("alice admin gpupool_cleartext\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := NewTokenFile(path); err == nil || !strings.Contains(err.Error(), "line 1: hash") {
		t.Fatalf("NewTokenFile = %v", err)
	}
}

// TestBearerHeader: only "Bearer <token>" is read.
func TestBearerHeader(t *testing.T) {
	for _, tc := range []struct {
		header string
		want   error
	}{
		{"", ErrNoCredential},
		{"Basic YWxpY2U6cHc=", ErrInvalidCredential},
		{"Bearer", ErrInvalidCredential},
		{"Bearer    ", ErrInvalidCredential},
		{"bearer tok", nil},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		if tc.header != "" {
			r.Header.Set("Authorization", tc.header)
		}
		tok, err := bearerToken(r)
		if !errors.Is(err, tc.want) || (tc.want == nil && tok != "tok") {
			t.Errorf("%q: %q, %v; want %v", tc.header, tok, err, tc.want)
		}
	}
}
