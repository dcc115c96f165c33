package grants

import (
	"fmt"
	"strings"

	"github.com/gpupool/gpupool/schemas"
)

// Section is a commented group of statements of the DDL.
type Section struct {
	Comment    string
	Statements []string
}

// Sections renders the plan as DDL for its database and cluster, one section per
// role after the views and profiles.
func (pl *Plan) Sections() []Section {
	p := pl.Params
	on := ""
	if oc := (schemas.MigrationParams{Cluster: p.Cluster}).OnCluster(); oc != "" {
		on = " " + oc
	}
	var out []Section
	if len(pl.Definer) > 0 {
		s := Section{Comment: "views and materialized views that read (and write) with their definer's rights: the administrator running this"}
		for _, v := range pl.Definer {
			s.Statements = append(s.Statements, fmt.Sprintf("ALTER TABLE %s.%s%s MODIFY SQL SECURITY DEFINER", p.DB, v, on))
		}
		out = append(out, s)
	}
	if len(pl.Profiles) > 0 {
		s := Section{Comment: "settings profiles"}
		for _, pr := range pl.Profiles {
			s.Statements = append(s.Statements, fmt.Sprintf("CREATE SETTINGS PROFILE IF NOT EXISTS %s%s %s", pr.Name, on, pr.Settings))
		}
		out = append(out, s)
	}
	for _, r := range pl.Roles {
		name := quoteName(r.Name)
		s := Section{Comment: "role " + r.Name + ": " + r.About}
		s.Statements = append(s.Statements, fmt.Sprintf("CREATE ROLE IF NOT EXISTS %s%s", name, on))
		for _, g := range pl.grantLines(r.Grants) {
			s.Statements = append(s.Statements, fmt.Sprintf("GRANT%s %s TO %s", on, g, name))
		}
		for _, in := range r.Inherits {
			s.Statements = append(s.Statements, fmt.Sprintf("GRANT%s %s TO %s", on, quoteName(in), name))
		}
		if r.Team != "" {
			for _, po := range pl.Policies {
				if po.Name == r.Name {
					s.Statements = append(s.Statements, pl.policy(po, on)...)
				}
			}
		}
		out = append(out, s)
	}
	if len(pl.Params.Teams) > 0 {
		s := Section{Comment: "everyone but the team readers keeps every row of the objects with team policies"}
		for _, po := range pl.Policies {
			if po.Name == UnscopedPolicy {
				s.Statements = append(s.Statements, pl.policy(po, on)...)
			}
		}
		out = append(out, s)
	}
	return out
}

// Statements returns every statement of the DDL, in order.
func (pl *Plan) Statements() []string {
	var out []string
	for _, s := range pl.Sections() {
		out = append(out, s.Statements...)
	}
	return out
}

// DDL returns the plan as a script for clickhouse-client --multiquery.
func (pl *Plan) DDL() string {
	var b strings.Builder
	fmt.Fprintf(&b, "-- gpupool roles for database %s", pl.Params.DB)
	if pl.Params.Cluster != "" {
		fmt.Fprintf(&b, " on cluster %s", pl.Params.Cluster)
	}
	b.WriteString(" (store/grants; docs/store-security.md). Run as an administrator after `gpupool migrate`.\n\n")
	for _, s := range pl.Sections() {
		fmt.Fprintf(&b, "-- %s\n", s.Comment)
		for _, q := range s.Statements {
			fmt.Fprintf(&b, "%s;\n", q)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// objects names object in the database: on a cluster a sharded table is two, the
// Distributed table and the <table>_local under it (a query reads the local one of
// its own shard with the user's rights).
func (pl *Plan) objects(object string) []string {
	db := pl.Params.DB
	if object == "*" {
		return []string{db + ".*"}
	}
	if pl.Params.Cluster != "" && pl.sharded[object] {
		return []string{db + "." + object, db + "." + object + "_local"}
	}
	return []string{db + "." + object}
}

// grantLines groups grants by object, in the order objects first appear:
// "SELECT, INSERT ON db.actions".
func (pl *Plan) grantLines(gs []Grant) []string {
	var order []string
	privs := map[string][]string{}
	for _, g := range gs {
		if _, ok := privs[g.Object]; !ok {
			order = append(order, g.Object)
		}
		privs[g.Object] = append(privs[g.Object], g.Privilege)
	}
	var out []string
	for _, o := range order {
		for _, obj := range pl.objects(o) {
			out = append(out, strings.Join(privs[o], ", ")+" ON "+obj)
		}
	}
	return out
}

// policy renders a row policy, on both tables of a sharded one.
func (pl *Plan) policy(po Policy, on string) []string {
	var out []string
	for _, obj := range pl.objects(po.Object) {
		out = append(out, fmt.Sprintf("CREATE ROW POLICY IF NOT EXISTS %s%s ON %s FOR SELECT USING %s AS permissive TO %s",
			quoteName(po.Name), on, obj, po.Using, po.To))
	}
	return out
}

// quoteName leaves a plain identifier as it is and backquotes any other (a team
// name with - or .).
func quoteName(s string) string {
	for i, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return schemas.QuoteIdent(s)
		}
	}
	return s
}
