package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// issuer is a real local OpenID Connect provider: discovery, JWKS, and ID tokens
// signed with its key.
type issuer struct {
	srv  *httptest.Server
	key  *ecdsa.PrivateKey
	down atomic.Bool
}

func newIssuer(t *testing.T) *issuer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	iss := &issuer{key: key}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		if iss.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer": iss.srv.URL, "jwks_uri": iss.srv.URL + "/keys",
			"authorization_endpoint": iss.srv.URL + "/auth", "token_endpoint": iss.srv.URL + "/token",
			"id_token_signing_alg_values_supported": []string{"ES256"},
		})
	})
	mux.HandleFunc("GET /keys", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "ES256", Use: "sig"}}})
	})
	iss.srv = httptest.NewServer(mux)
	t.Cleanup(iss.srv.Close)
	return iss
}

// sign returns an ID token with claims, signed by key (nil: the issuer's).
func (iss *issuer) sign(t *testing.T, claims map[string]any, key *ecdsa.PrivateKey) string {
	t.Helper()
	if key == nil {
		key = iss.key
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: key, KeyID: "k1"}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(claims)
	jws, err := signer.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// oidcGuard is a guard accepting the issuer's tokens for client gpupool.
func oidcGuard(t *testing.T, iss *issuer, clk *fakeClock, m *Metrics) *Guard {
	t.Helper()
	cfg := DefaultConfig()
	cfg.TokensFile = filepath.Join(t.TempDir(), "tokens")
	cfg.OIDC.Issuer, cfg.OIDC.ClientID, cfg.OIDC.UsernameClaim = iss.srv.URL, "gpupool", "email"
	cfg.OIDC.Groups = map[string][]string{"gpu-admins": {"admin"}, "ml-nlp": {"team:nlp"}, "ml-vision": {"team:vision"}}
	g, err := New(t.Context(), cfg, WithClock(clk.now), WithMetrics(m))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestOIDC verifies real ID tokens of a local provider: the groups claim maps to
// roles, and an expired token, another audience or issuer, a foreign key, a
// tampered payload and a token without a username are refused with 401; a user
// in no mapped group is known but may do nothing (403).
func TestOIDC(t *testing.T) {
	iss := newIssuer(t)
	clk, m := newFakeClock(), NewMetrics(nil)
	g := oidcGuard(t, iss, clk, m)
	now := clk.now()
	claims := func(edit func(map[string]any)) map[string]any {
		c := map[string]any{"iss": iss.srv.URL, "aud": "gpupool", "sub": "u-17", "email": "alice@example.com",
			"groups": []string{"ml-nlp", "marketing"}, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
		if edit != nil {
			edit(c)
		}
		return c
	}
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	valid := iss.sign(t, claims(nil), nil)
	parts := strings.Split(valid, ".")
	tampered := parts[0] + "." + jsonB64(t, claims(func(c map[string]any) { c["groups"] = []string{"gpu-admins"} })) + "." + parts[2]
	teams := g.Handler(g.Allow(AnyRole(RoleAnyTeam, RoleAdmin), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _ := FromContext(r.Context())
		_, _ = w.Write([]byte(Describe(id)))
	})))
	for _, tc := range []struct {
		name, token string
		status      int
		body        string // in the reply
	}{
		{"team member", valid, 200, "oidc:alice@example.com (team:nlp)"},
		{"admin and team", iss.sign(t, claims(func(c map[string]any) { c["groups"] = []string{"ml-vision", "gpu-admins"} }), nil), 200, "(team:vision, admin)"},
		{"one group as a string", iss.sign(t, claims(func(c map[string]any) { c["groups"] = "ml-vision" }), nil), 200, "(team:vision)"},
		{"unknown group", iss.sign(t, claims(func(c map[string]any) { c["groups"] = []string{"marketing"} }), nil), 403, `"code":"forbidden"`},
		{"no groups", iss.sign(t, claims(func(c map[string]any) { delete(c, "groups") }), nil), 403, "(no role) may not GET"},
		{"expired", iss.sign(t, claims(func(c map[string]any) { c["exp"] = now.Add(-time.Minute).Unix() }), nil), 401, "expired"},
		{"wrong audience", iss.sign(t, claims(func(c map[string]any) { c["aud"] = "grafana" }), nil), 401, "audience"},
		{"wrong issuer", iss.sign(t, claims(func(c map[string]any) { c["iss"] = "https://evil.example.com" }), nil), 401, "different provider"},
		{"foreign key", iss.sign(t, claims(nil), other), 401, "signature"},
		{"tampered payload", tampered, 401, "signature"},
		{"no username", iss.sign(t, claims(func(c map[string]any) { delete(c, "email") }), nil), 401, `no \"email\" claim`},
		{"not a JWT, not a known token", "gpupool_nope", 401, "unknown token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			teams.ServeHTTP(w, bearer(tc.token))
			if w.Code != tc.status || !strings.Contains(w.Body.String(), tc.body) {
				t.Fatalf("%d %s, want %d with %q", w.Code, w.Body, tc.status, tc.body)
			}
		})
	}
}

// TestOIDCProviderDown: while the provider cannot be discovered a token gets 503
// (not the caller's fault); once it answers, the next try after the retry
// interval succeeds.
func TestOIDCProviderDown(t *testing.T) {
	iss := newIssuer(t)
	iss.down.Store(true)
	clk := newFakeClock()
	g := oidcGuard(t, iss, clk, nil)
	tok := iss.sign(t, map[string]any{"iss": iss.srv.URL, "aud": "gpupool", "email": "a@x", "groups": []string{"ml-nlp"},
		"exp": clk.now().Add(time.Hour).Unix()}, nil)
	h := g.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	serve := func() int {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, bearer(tok))
		return w.Code
	}
	if code := serve(); code != http.StatusServiceUnavailable {
		t.Fatalf("provider down: %d", code)
	}
	iss.down.Store(false)
	if code := serve(); code != http.StatusServiceUnavailable {
		t.Fatalf("within the retry interval: %d", code)
	}
	clk.add(discoveryRetry)
	if code := serve(); code != http.StatusOK {
		t.Fatalf("provider back: %d", code)
	}
}

func jsonB64(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(data)
}
