package api

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpupool/gpupool/auth"
)

func decodeBody(resp *http.Response, v any) error { return json.NewDecoder(resp.Body).Decode(v) }

// testTokens are the callers of the tests, by name; each one's token is
// "tok-<name>".
var testTokens = map[string][]auth.Role{
	"admin":    {auth.RoleAdmin},
	"ops":      {auth.RoleOperator},
	"nlp":      {auth.TeamRole("nlp")},
	"vision":   {auth.TeamRole("vision")},
	"twoteams": {auth.TeamRole("nlp"), auth.TeamRole("audio")},
	"finance":  {auth.RoleFinance},
	"analyzer": {auth.RoleAnalyzer},
	"agent":    {auth.RoleAgent},
	"nobody":   {auth.TeamRole("nobody")},
}

// newGuard is a guard whose tokens file holds testTokens, with no rate limit.
func newGuard(t testing.TB, opts ...auth.Option) *auth.Guard {
	t.Helper()
	cfg := auth.DefaultConfig()
	cfg.RateLimit = 0
	cfg.TokensFile = filepath.Join(t.TempDir(), "tokens")
	var lines []string
	for name, roles := range testTokens {
		lines = append(lines, auth.TokenEntry{Name: name, Roles: roles, Hash: auth.HashToken("tok-" + name)}.String())
	}
	if err := os.WriteFile(cfg.TokensFile, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g, err := auth.New(t.Context(), cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return g
}
