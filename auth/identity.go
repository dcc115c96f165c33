package auth

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Role is what an identity may do; the APIs decide what each role allows.
type Role string

// The roles. A team's role is TeamRole(name): "team:<name>".
const (
	// RoleAdmin may do everything.
	RoleAdmin Role = "admin"
	// RoleOperator runs the pool: queues, policies, actions on any job.
	RoleOperator Role = "operator"
	// RoleFinance reads: chargeback, reports, the audit trail; changes nothing.
	RoleFinance Role = "finance"
	// RoleAnalyzer is the one identity that pushes findings.
	RoleAnalyzer Role = "analyzer"
	// RoleAgent is a node agent: commands for its own node only.
	RoleAgent Role = "agent"
	// RoleAnyTeam matches every team role in AnyRole; no identity holds it.
	RoleAnyTeam Role = "team:*"
)

// teamPrefix starts every team role.
const teamPrefix = "team:"

// teamRe is what a team name may hold: it ends up in job keys and subjects.
var teamRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// TeamRole is the role of the members of team.
func TeamRole(team string) Role { return Role(teamPrefix + team) }

// Team is the team of a team role, and whether r is one.
func (r Role) Team() (string, bool) {
	t, ok := strings.CutPrefix(string(r), teamPrefix)
	if !ok || t == "*" {
		return "", false
	}
	return t, true
}

// ParseRole reads a role: admin, operator, finance, analyzer, agent or
// team:<name> (letters, digits, '.', '_' and '-').
func ParseRole(s string) (Role, error) {
	switch r := Role(s); r {
	case RoleAdmin, RoleOperator, RoleFinance, RoleAnalyzer, RoleAgent:
		return r, nil
	}
	if t, ok := strings.CutPrefix(s, teamPrefix); ok {
		if !teamRe.MatchString(t) {
			return "", fmt.Errorf("role %q: a team name is 1-64 letters, digits, '.', '_' or '-'", s)
		}
		return Role(s), nil
	}
	return "", fmt.Errorf("role %q is not admin, operator, finance, analyzer, agent or team:<name>", s)
}

// ParseRoles reads roles, each with ParseRole.
func ParseRoles(ss []string) ([]Role, error) {
	out := make([]Role, 0, len(ss))
	for _, s := range ss {
		r, err := ParseRole(strings.TrimSpace(s))
		if err != nil {
			return nil, err
		}
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out, nil
}

// Identity is an authenticated caller.
type Identity struct {
	// Name is who: a token's name, an OIDC user (its username claim), a client
	// certificate's common name.
	Name string
	// Method is how it proved it: token, oidc, cert, or none (auth mode none).
	Method string
	Roles  []Role
}

// String is the identity as the audit trail records it: method:name.
func (id Identity) String() string { return id.Method + ":" + id.Name }

// Has reports whether the identity holds role r (RoleAnyTeam: any team role).
func (id Identity) Has(r Role) bool {
	if r == RoleAnyTeam {
		return len(id.Teams()) > 0
	}
	return slices.Contains(id.Roles, r)
}

// Teams lists the teams whose role the identity holds.
func (id Identity) Teams() []string {
	var out []string
	for _, r := range id.Roles {
		if t, ok := r.Team(); ok {
			out = append(out, t)
		}
	}
	return out
}

// InTeam reports whether the identity holds team's role.
func (id Identity) InTeam(team string) bool { return team != "" && id.Has(TeamRole(team)) }

type identityKey struct{}

// NewContext returns ctx carrying id.
func NewContext(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// FromContext returns the identity a Guard put into ctx.
func FromContext(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(Identity)
	return id, ok
}
