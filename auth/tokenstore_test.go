package auth

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEnsureAdminToken: the first start writes a 0600 admin token and its hash,
// later starts keep it, a lost tokens line is restored, and deleting the token
// file rotates it.
func TestEnsureAdminToken(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "auth")
	tokens, admin := filepath.Join(dir, "tokens"), filepath.Join(dir, "admin.token")
	created, err := EnsureAdminToken(tokens, admin)
	if err != nil || !created {
		t.Fatalf("first start: %v, %v", created, err)
	}
	for _, p := range []string{tokens, admin} {
		st, err := os.Stat(p)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v, want 0600", p, st.Mode(), err)
		}
	}
	if st, _ := os.Stat(dir); st.Mode().Perm() != 0o700 {
		t.Errorf("folder mode %v", st.Mode())
	}
	tok := read(t, admin)
	if !strings.HasPrefix(tok, TokenPrefix) || strings.Contains(read(t, tokens), tok) {
		t.Fatalf("admin token %q in the tokens file, or not a token", tok)
	}
	authAs := func(tok string) (Identity, error) {
		tf, err := NewTokenFile(tokens)
		if err != nil {
			t.Fatal(err)
		}
		return tf.Authenticate(bearer(tok))
	}
	if id, err := authAs(tok); err != nil || id.Name != AdminName || !id.Has(RoleAdmin) {
		t.Fatalf("admin token: %+v, %v", id, err)
	}
	before := read(t, tokens)
	if created, err := EnsureAdminToken(tokens, admin); err != nil || created || read(t, tokens) != before {
		t.Fatalf("second start changed something: %v %v", created, err)
	}
	// A tokens file replaced without the admin line: restored.
	if err := os.WriteFile(tokens, []byte("ops operator "+HashToken("x")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := EnsureAdminToken(tokens, admin); err != nil {
		t.Fatal(err)
	}
	if id, err := authAs(tok); err != nil || id.Name != AdminName {
		t.Fatalf("restored admin token: %+v, %v", id, err)
	}
	if !strings.Contains(read(t, tokens), "ops operator") {
		t.Error("the other tokens were lost")
	}
	// Rotation.
	if err := os.Remove(admin); err != nil {
		t.Fatal(err)
	}
	if created, err := EnsureAdminToken(tokens, admin); err != nil || !created {
		t.Fatalf("rotate: %v %v", created, err)
	}
	if _, err := authAs(tok); err == nil {
		t.Error("the old admin token still works after rotation")
	}
	if id, err := authAs(read(t, admin)); err != nil || id.Name != AdminName {
		t.Errorf("new admin token: %+v, %v", id, err)
	}
	if n := strings.Count(read(t, tokens), "\nadmin "); n != 1 {
		t.Errorf("%d admin lines:\n%s", n, read(t, tokens))
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}
