package grants

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata files")

// TestDDLGolden pins the DDL `gpupool migrate --print-grants` prints, on one server
// and on a cluster (ON CLUSTER, the _local tables granted and policed beside the
// Distributed ones); `go test ./store/grants -update` rewrites it.
func TestDDLGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    Params
	}{
		{"single", Params{DB: "gpupool", Teams: []string{"vision", "ml-research"}}},
		{"cluster", Params{DB: "gpupool", Cluster: "gpu_fleet", Teams: []string{"vision", "ml-research"}}},
		{"no_teams", Params{DB: "gpupool"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl, err := Build(tc.p)
			if err != nil {
				t.Fatal(err)
			}
			got := pl.DDL()
			path := filepath.Join("testdata", "grants_"+tc.name+".sql.golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test ./store/grants -update)", err)
			}
			if got != string(want) {
				t.Errorf("DDL differs from %s (go test ./store/grants -update, then review the diff)", path)
			}
		})
	}
}

// TestDDLShape checks what every statement must be: idempotent, ON CLUSTER exactly
// when a cluster is set, and about the configured database only.
func TestDDLShape(t *testing.T) {
	for _, cluster := range []string{"", "gpu_fleet"} {
		pl, err := Build(Params{DB: "gp_db", Cluster: cluster, Teams: []string{"a"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range pl.Statements() {
			if (cluster != "") != strings.Contains(q, " ON CLUSTER `gpu_fleet`") {
				t.Errorf("cluster %q: %s", cluster, q)
			}
			if strings.HasPrefix(q, "CREATE ") && !strings.Contains(q, " IF NOT EXISTS ") {
				t.Errorf("not idempotent: %s", q)
			}
			if strings.Contains(q, "gpupool.") {
				t.Errorf("names an object of the database the SQL files are written for, not gp_db: %s", q)
			}
			if strings.HasPrefix(q, "CREATE USER") || strings.Contains(q, "IDENTIFIED") {
				t.Errorf("the DDL creates no users: %s", q)
			}
		}
	}
}

// TestRolesFromSQLFiles: finance.sql's and grafana.sql's roles come through as the
// files write them, their users do not.
func TestRolesFromSQLFiles(t *testing.T) {
	pl, err := Build(Params{DB: "gpupool"})
	if err != nil {
		t.Fatal(err)
	}
	fin, ok := pl.Role("gpupool_finance")
	if !ok || !can(fin, Select, "chargeback_monthly") || !can(fin, Select, "findings_open") || can(fin, Select, "gpu_samples") || len(fin.Inherits) != 0 {
		t.Errorf("gpupool_finance = %+v", fin)
	}
	pricing, ok := pl.Role("gpupool_pricing")
	if !ok || !can(pricing, Insert, "price_book") || !slices.Equal(pricing.Inherits, []string{"gpupool_finance"}) {
		t.Errorf("gpupool_pricing = %+v", pricing)
	}
	graf, ok := pl.Role("gpupool_grafana")
	if !ok || !can(graf, Select, "gpu_samples") || can(graf, Insert, "gpu_samples") {
		t.Errorf("gpupool_grafana = %+v", graf)
	}
	if !slices.ContainsFunc(pl.Profiles, func(p Profile) bool { return p.Name == "gpupool_grafana" }) {
		t.Errorf("profiles %+v: want grafana.sql's gpupool_grafana", pl.Profiles)
	}
	for _, v := range []string{"findings_open", "chargeback_daily", "price_book_current"} {
		if !slices.Contains(pl.Definer, v) {
			t.Errorf("%s is not SQL SECURITY DEFINER; definer views: %v", v, pl.Definer)
		}
	}
	ddl := pl.DDL()
	for _, user := range []string{"TO finance;", "TO grafana;", "TO finance_admin;", "change-me"} {
		if strings.Contains(ddl, user) {
			t.Errorf("the DDL carries the files' users (%q)", user)
		}
	}
}

// can reports whether the role itself (not the roles it inherits) holds privilege on
// object.
func can(r Role, privilege, object string) bool {
	return slices.Contains(r.Grants, Grant{privilege, object}) || slices.Contains(r.Grants, Grant{privilege, "*"})
}

// TestParseSQLFileRefuses: a statement store/grants does not read is an error, not a
// grant silently dropped.
func TestParseSQLFileRefuses(t *testing.T) {
	for _, q := range []string{
		"GRANT ALTER ON gpupool.price_book TO gpupool_x;",
		"CREATE ROLE IF NOT EXISTS gpupool_x;\nGRANT SELECT ON other.t TO gpupool_x;",
		"GRANT SELECT ON gpupool.t TO somebody;",
		"REVOKE SELECT ON gpupool.t FROM gpupool_x;",
	} {
		if _, err := parseSQLFile("x.sql", q); err == nil {
			t.Errorf("parseSQLFile accepted %q", q)
		}
	}
	f, err := parseSQLFile("x.sql", "CREATE ROLE IF NOT EXISTS gpupool_x;\nCREATE USER IF NOT EXISTS u IDENTIFIED WITH sha256_password BY 'p' DEFAULT ROLE gpupool_x;\nGRANT gpupool_x TO u;\nGRANT SELECT ON gpupool.t TO gpupool_x;")
	if err != nil || len(f.roles) != 1 || len(f.roles[0].Grants) != 1 || len(f.roles[0].Inherits) != 0 {
		t.Fatalf("parseSQLFile = %+v, %v", f, err)
	}
}

func TestParamsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    Params
		want string
	}{
		{"injection in db", Params{DB: "x; DROP TABLE y"}, "database name"},
		{"bad cluster", Params{DB: "ok", Cluster: "a b"}, "cluster name"},
		{"quote in team", Params{DB: "ok", Teams: []string{"x' OR 1=1 --"}}, "team"},
		{"empty team", Params{DB: "ok", Teams: []string{""}}, "team"},
		{"backquote in team", Params{DB: "ok", Teams: []string{"a`b"}}, "team"},
		{"team twice", Params{DB: "ok", Teams: []string{"a", "a"}}, "twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Build(tc.p)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Build(%+v) = %v, want an error mentioning %q", tc.p, err, tc.want)
			}
		})
	}
}

// TestTeamPolicies: each team's policies name its role, and the unscoped policy
// leaves out every team reader.
func TestTeamPolicies(t *testing.T) {
	pl, err := Build(Params{DB: "gpupool", Teams: []string{"vision", "nlp"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range TeamObjects {
		var names []string
		for _, po := range pl.Policies {
			if po.Object == o {
				names = append(names, po.Name+" "+po.Using+" "+po.To)
			}
		}
		want := []string{
			UnscopedPolicy + " 1 ALL EXCEPT " + TeamsRole,
			"gpupool_team_vision team = 'vision' gpupool_team_vision",
			"gpupool_team_nlp team = 'nlp' gpupool_team_nlp",
		}
		if !slices.Equal(names, want) {
			t.Errorf("%s: policies %q, want %q", o, names, want)
		}
	}
	for _, team := range []string{"vision", "nlp"} {
		r, ok := pl.Role(TeamRole(team))
		if !ok || r.Team != team || !slices.Equal(r.Inherits, []string{TeamsRole}) || len(r.Grants) != 0 {
			t.Errorf("%s = %+v", TeamRole(team), r)
		}
	}
	none, err := Build(Params{DB: "gpupool"})
	if err != nil {
		t.Fatal(err)
	}
	if len(none.Policies) != 0 || strings.Contains(none.DDL(), "ROW POLICY") {
		t.Error("without teams the DDL must create no row policy: one would hide rows from everyone it does not name")
	}
}
