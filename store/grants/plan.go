package grants

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/gpupool/gpupool/deploy/clickhouse"
	"github.com/gpupool/gpupool/schemas"
)

// Build returns the plan for p: the service roles, the roles of finance.sql and
// grafana.sql, and a reader per team with its row policies.
func Build(p Params) (*Plan, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("grants: %w", err)
	}
	mvs, sharded, err := schemaObjects(p.DB)
	if err != nil {
		return nil, err
	}
	pl := &Plan{Params: p, Definer: mvs, Roles: slices.Clone(ServiceRoles), sharded: sharded}
	// The service roles come first but gpupool_reports inherits gpupool_finance:
	// the roles of the SQL files go before them.
	var fileRoles []Role
	for _, f := range []struct{ name, sql string }{
		{"deploy/clickhouse/finance.sql", clickhouse.FinanceSQL},
		{"deploy/clickhouse/grafana.sql", clickhouse.GrafanaSQL},
	} {
		fs, err := parseSQLFile(f.name, f.sql)
		if err != nil {
			return nil, err
		}
		for _, v := range fs.definer {
			if !slices.Contains(pl.Definer, v) {
				pl.Definer = append(pl.Definer, v)
			}
		}
		pl.Profiles = append(pl.Profiles, fs.profiles...)
		fileRoles = append(fileRoles, fs.roles...)
	}
	pl.Roles = append(fileRoles, pl.Roles...)
	if len(p.Teams) > 0 {
		pl.Roles = append(pl.Roles, teamsRole())
		for _, t := range p.Teams {
			pl.Roles = append(pl.Roles, teamRole(t))
		}
		for _, o := range TeamObjects {
			pl.Policies = append(pl.Policies, Policy{Name: UnscopedPolicy, Object: o, Using: "1", To: "ALL EXCEPT " + TeamsRole})
			for _, t := range p.Teams {
				pl.Policies = append(pl.Policies, Policy{Name: TeamRole(t), Object: o, Using: "team = '" + t + "'", To: quoteName(TeamRole(t))})
			}
		}
	}
	return pl, nil
}

var (
	createMV    = regexp.MustCompile(`^CREATE MATERIALIZED VIEW IF NOT EXISTS [A-Za-z0-9_]+\.([a-z_]+) `)
	dropView    = regexp.MustCompile(`^DROP VIEW IF EXISTS [A-Za-z0-9_]+\.([a-z_]+)\b`)
	createLocal = regexp.MustCompile(`^CREATE TABLE IF NOT EXISTS [A-Za-z0-9_]+\.([a-z_]+)_local `)
)

// schemaObjects reads the migrations for the materialized views still defined (none
// since migration 0021: ingest writes the rollups the views wrote) and the tables a
// cluster shards.
func schemaObjects(db string) (mvs []string, sharded map[string]bool, err error) {
	ms, err := schemas.Migrations(schemas.MigrationParams{DB: db, Cluster: "c", RawTTLDays: 1})
	if err != nil {
		return nil, nil, fmt.Errorf("grants: %w", err)
	}
	sharded = map[string]bool{}
	for _, m := range ms {
		for _, q := range m.Statements {
			if g := createMV.FindStringSubmatch(q); g != nil {
				mvs = append(mvs, g[1])
			}
			if g := dropView.FindStringSubmatch(strings.TrimSpace(q)); g != nil {
				mvs = slices.DeleteFunc(mvs, func(v string) bool { return v == g[1] })
			}
			if g := createLocal.FindStringSubmatch(q); g != nil {
				sharded[g[1]] = true
			}
		}
	}
	return mvs, sharded, nil
}

// sqlFile is what a deploy/clickhouse file contributes: its roles, the views it
// makes SQL SECURITY DEFINER, its settings profiles.
type sqlFile struct {
	roles    []Role
	definer  []string
	profiles []Profile
}

var (
	fileRole    = regexp.MustCompile(`^CREATE ROLE IF NOT EXISTS ([a-z_]+)$`)
	fileProfile = regexp.MustCompile(`^CREATE SETTINGS PROFILE IF NOT EXISTS ([a-z_]+) (SETTINGS .+)$`)
	fileDefiner = regexp.MustCompile(`^ALTER TABLE gpupool\.([a-z_]+) MODIFY SQL SECURITY DEFINER$`)
	fileGrant   = regexp.MustCompile(`^GRANT (SELECT|INSERT) ON gpupool\.([a-z_]+|\*) TO ([a-z_]+)$`)
	fileInherit = regexp.MustCompile(`^GRANT ([a-z_]+) TO ([a-z_]+)$`)
	fileUser    = regexp.MustCompile(`^CREATE USER IF NOT EXISTS [a-z_]+ `)
)

// parseSQLFile reads the roles of a deploy/clickhouse file written for the database
// gpupool on one server. Its users, and the roles it grants them, are left out: the
// DDL creates no users. A statement of any other form is an error, so that the file
// cannot gain a grant the DDL silently drops.
func parseSQLFile(name, sql string) (*sqlFile, error) {
	f := &sqlFile{}
	role := func(n string) *Role {
		i := slices.IndexFunc(f.roles, func(r Role) bool { return r.Name == n })
		if i < 0 {
			return nil
		}
		return &f.roles[i]
	}
	for _, q := range schemas.SplitStatements(sql) {
		q = strings.Join(strings.Fields(q), " ")
		if g := fileRole.FindStringSubmatch(q); g != nil {
			f.roles = append(f.roles, Role{Name: g[1], About: "defined in " + name})
			continue
		}
		if g := fileProfile.FindStringSubmatch(q); g != nil {
			f.profiles = append(f.profiles, Profile{Name: g[1], Settings: g[2]})
			continue
		}
		if g := fileDefiner.FindStringSubmatch(q); g != nil {
			f.definer = append(f.definer, g[1])
			continue
		}
		if g := fileGrant.FindStringSubmatch(q); g != nil {
			r := role(g[3])
			if r == nil {
				return nil, fmt.Errorf("grants: %s grants %s on %s to %s, which is not a role of the file", name, g[1], g[2], g[3])
			}
			r.Grants = append(r.Grants, Grant{g[1], g[2]})
			continue
		}
		if g := fileInherit.FindStringSubmatch(q); g != nil {
			if r := role(g[2]); r != nil {
				r.Inherits = append(r.Inherits, g[1])
			}
			continue // else a role granted to a user
		}
		if fileUser.MatchString(q) {
			continue
		}
		return nil, fmt.Errorf("grants: %s: a statement of a form store/grants does not read: %s", name, q)
	}
	return f, nil
}
