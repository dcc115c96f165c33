package auth

import (
	"strings"
	"testing"
)

// TestParseRole reads the six roles and refuses what is not one.
func TestParseRole(t *testing.T) {
	for _, tc := range []struct {
		in, err string
		team    string
	}{
		{in: "admin"}, {in: "operator"}, {in: "finance"}, {in: "analyzer"}, {in: "agent"},
		{in: "team:nlp", team: "nlp"}, {in: "team:ml-infra.eu_1", team: "ml-infra.eu_1"},
		{in: "root", err: "is not admin"},
		{in: "team:", err: "team name"},
		{in: "team:*", err: "team name"},
		{in: "team:a b", err: "team name"},
		{in: "team:x' OR 1=1 --", err: "team name"},
		{in: "Admin", err: "is not admin"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			r, err := ParseRole(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseRole(%q) = %q, %v; want an error with %q", tc.in, r, err, tc.err)
				}
				return
			}
			if err != nil || string(r) != tc.in {
				t.Fatalf("ParseRole(%q) = %q, %v", tc.in, r, err)
			}
			if team, ok := r.Team(); ok != (tc.team != "") || team != tc.team {
				t.Errorf("Team() = %q, %v; want %q", team, ok, tc.team)
			}
		})
	}
}

// TestIdentity: team roles give teams, RoleAnyTeam matches any of them, and
// Describe names the roles.
func TestIdentity(t *testing.T) {
	id := Identity{Name: "alice", Method: "token", Roles: []Role{TeamRole("nlp"), TeamRole("vision"), RoleFinance}}
	if got := strings.Join(id.Teams(), ","); got != "nlp,vision" {
		t.Errorf("Teams() = %s", got)
	}
	if !id.Has(RoleAnyTeam) || !id.InTeam("vision") || id.InTeam("") || id.InTeam("audio") || id.Has(RoleAdmin) {
		t.Errorf("Has/InTeam wrong for %+v", id)
	}
	if (Identity{Roles: []Role{RoleAdmin}}).Has(RoleAnyTeam) {
		t.Error("admin holds no team role")
	}
	if got := Describe(id); got != "token:alice (team:nlp, team:vision, finance)" {
		t.Errorf("Describe = %q", got)
	}
	if got := Describe(Identity{Name: "bob", Method: "oidc"}); got != "oidc:bob (no role)" {
		t.Errorf("Describe = %q", got)
	}
	if !AnyRole(RoleOperator, RoleAnyTeam)(id) || AnyRole(RoleAnalyzer)(id) {
		t.Error("AnyRole")
	}
}
