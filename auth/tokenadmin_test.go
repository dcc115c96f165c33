package auth

import (
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestTokenAdmin: a created token is let in by a running guard from its next
// reload, with its roles; list shows it; revoke makes it 401 from the next
// reload; the other lines and the file's comments survive; the file stays 0600.
func TestTokenAdmin(t *testing.T) {
	clk := newFakeClock()
	g := tokenGuard(t, nil, []Option{WithClock(clk.now)}, map[string]Role{"ops": RoleOperator})
	path := g.tokens.path
	h := g.Handler(echo)
	status := func(tok string) int {
		r := httptest.NewRequest("GET", "/v1/queues", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	tok, e, err := CreateToken(path, "vision-ci", []string{"team:vision", "finance"}, time.Time{}, clk.now())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok, TokenPrefix) || e.Hash != HashToken(tok) || strings.Contains(read(t, path), tok) {
		t.Fatalf("token %q, entry %+v: the file must hold its hash only", tok, e)
	}
	clk.add(reloadInterval)
	if got := status(tok); got != 200 {
		t.Fatalf("created token: %d, want 200 after a reload", got)
	}
	if got := status("tok-ops"); got != 200 {
		t.Fatalf("the token already there: %d", got)
	}
	es, err := ListTokens(path)
	if err != nil || len(es) != 2 || es[1].Name != "vision-ci" || es[1].RoleList() != "team:vision,finance" {
		t.Fatalf("list: %+v, %v", es, err)
	}
	if err := RevokeToken(path, "vision-ci"); err != nil {
		t.Fatal(err)
	}
	clk.add(reloadInterval)
	if got := status(tok); got != 401 {
		t.Fatalf("revoked token: %d, want 401", got)
	}
	if got := status("tok-ops"); got != 200 {
		t.Fatalf("revoking vision-ci took ops: %d", got)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("tokens file after the edits: %v %v, want 0600", st.Mode(), err)
	}
}

// TestTokenExpiry: a line with expires= is let in before it and refused (401)
// from it on; a line without one never expires; an expiry in the past or a bad
// name or role is refused at create, naming what is wrong.
func TestTokenExpiry(t *testing.T) {
	clk := newFakeClock()
	g := tokenGuard(t, nil, []Option{WithClock(clk.now)}, map[string]Role{"ops": RoleOperator})
	path := g.tokens.path
	tok, e, err := CreateToken(path, "contractor", []string{"team:nlp"}, clk.now().Add(time.Hour), clk.now())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(read(t, path), "contractor team:nlp "+e.Hash+" expires=2026-12-01T10:00:00Z") {
		t.Fatalf("tokens file:\n%s", read(t, path))
	}
	h := g.Handler(echo)
	status := func(tok string) (int, string) {
		r := httptest.NewRequest("GET", "/v1/queues", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code, w.Body.String()
	}
	clk.add(59 * time.Minute)
	if code, body := status(tok); code != 200 {
		t.Fatalf("a minute before expiry: %d %s", code, body)
	}
	clk.add(time.Minute)
	if code, body := status(tok); code != 401 || !strings.Contains(body, "expired at 2026-12-01T10:00:00Z") {
		t.Fatalf("at expiry: %d %s, want 401 naming the expiry", code, body)
	}
	clk.add(365 * 24 * time.Hour)
	if code, _ := status("tok-ops"); code != 200 {
		t.Fatalf("a line without expires=: %d a year on", code)
	}
	for _, tc := range []struct {
		name, token string
		roles       []string
		expires     time.Time
		want        string
	}{
		{"past expiry", "late", []string{"admin"}, clk.now().Add(-time.Second), "is not after now"},
		{"unknown role", "bob", []string{"root"}, time.Time{}, `role "root" is not admin, operator, finance, analyzer, agent or team:<name>`},
		{"bad team", "bob", []string{"team:a/b"}, time.Time{}, `role "team:a/b": a team name`},
		{"no role", "bob", nil, time.Time{}, "no role; give at least one of admin"},
		{"bad name", "bob smith", []string{"admin"}, time.Time{}, `token name "bob smith": 1-128 letters`},
		{"name taken", "ops", []string{"admin"}, time.Time{}, `"ops" (gpupool token revoke ops first`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := read(t, path)
			_, _, err := CreateToken(path, tc.token, tc.roles, tc.expires, clk.now())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("create: %v, want %q", err, tc.want)
			}
			if read(t, path) != before {
				t.Error("a refused create changed the file")
			}
		})
	}
	if err := RevokeToken(path, "nobody"); !errors.Is(err, ErrNoSuchToken) || !strings.Contains(err.Error(), "the file has: ops, contractor") {
		t.Errorf("revoke of an unknown name: %v", err)
	}
}

// TestTokenAdminRefusesExposedFile: a tokens file others may read, a link, or
// (as root) a file of another user is left alone by create and revoke.
func TestTokenAdminRefusesExposedFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tokens")
	if _, _, err := CreateToken(path, "ops", []string{"operator"}, time.Time{}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	before := read(t, path)
	_, _, err := CreateToken(path, "bob", []string{"admin"}, time.Time{}, time.Now())
	if !errors.Is(err, ErrTokensFileExposed) || !strings.Contains(err.Error(), "is mode 0644") || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("create in a 0644 file: %v", err)
	}
	if err := RevokeToken(path, "ops"); !errors.Is(err, ErrTokensFileExposed) {
		t.Fatalf("revoke in a 0644 file: %v", err)
	}
	if read(t, path) != before {
		t.Fatal("a refused edit changed the file")
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if _, _, err := CreateToken(link, "bob", []string{"admin"}, time.Time{}, time.Now()); !errors.Is(err, ErrTokensFileExposed) {
		t.Fatalf("create through a link: %v", err)
	}
	if os.Geteuid() != 0 {
		return // only root can give a file away; the mode and link cases ran
	}
	if err := os.Chown(path, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	_, _, err = CreateToken(path, "bob", []string{"admin"}, time.Time{}, time.Now())
	if !errors.Is(err, ErrTokensFileExposed) || !strings.Contains(err.Error(), "belongs to uid 4242") {
		t.Fatalf("create in another user's file: %v", err)
	}
}

// TestTokenAdminConcurrent: creates and revokes at once each land: none is lost
// to another's rewrite of the file.
func TestTokenAdminConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "auth", "tokens")
	for i := range 4 {
		if _, _, err := CreateToken(path, fmt.Sprintf("old-%d", i), []string{"finance"}, time.Time{}, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 16 {
		wg.Go(func() {
			_, _, err := CreateToken(path, fmt.Sprintf("new-%d", i), []string{"team:t"}, time.Time{}, time.Now())
			errs <- err
		})
	}
	for i := range 4 {
		wg.Go(func() { errs <- RevokeToken(path, fmt.Sprintf("old-%d", i)) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	es, err := ListTokens(path)
	if err != nil || len(es) != 16 {
		t.Fatalf("%d tokens after 16 creates and 4 revokes of 4: %v\n%s", len(es), err, read(t, path))
	}
	for _, e := range es {
		if !strings.HasPrefix(e.Name, "new-") {
			t.Errorf("%s survived its revoke", e.Name)
		}
	}
}

// TestParseExpiry reads the forms a person writes and refuses the rest naming
// them all.
func TestParseExpiry(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"":                          {},
		"720h":                      now.Add(720 * time.Hour),
		"90d":                       now.Add(90 * 24 * time.Hour),
		"2027-01-01":                time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC),
		"2027-01-01T18:00:00+01:00": time.Date(2027, 1, 1, 17, 0, 0, 0, time.UTC),
	} {
		if got, err := ParseExpiry(in, now); err != nil || !got.Equal(want) {
			t.Errorf("%q: %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"soon", "-1h", "0d", "d", "31/12/2026"} {
		if _, err := ParseExpiry(in, now); err == nil || !strings.Contains(err.Error(), "want a positive duration from now (720h, 90d), a date (2026-12-31, midnight UTC) or an RFC 3339 time") {
			t.Errorf("%q: %v", in, err)
		}
	}
}

// TestWriteTokensJSON: names, roles and expiry, never a hash.
func TestWriteTokensJSON(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	es := []TokenEntry{
		{Name: "ci", Roles: []Role{TeamRole("vision"), RoleFinance}, Hash: HashToken("a")},
		{Name: "old", Roles: []Role{RoleAdmin}, Hash: HashToken("b"), Expires: now.Add(-time.Hour)},
	}
	var b strings.Builder
	if err := WriteTokens(&b, es, now, true); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(strings.Fields(b.String()), "")
	want := `[{"name":"ci","roles":["team:vision","finance"],"expired":false},{"name":"old","roles":["admin"],"expires":"2026-12-01T08:00:00Z","expired":true}]`
	if got != want {
		t.Errorf("JSON %s, want %s", got, want)
	}
}
