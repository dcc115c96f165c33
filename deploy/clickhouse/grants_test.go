package clickhouse_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpupool/gpupool/analyzer"
	"github.com/gpupool/gpupool/analyzer/pricebook"
	"github.com/gpupool/gpupool/auth"
	"github.com/gpupool/gpupool/console"
	"github.com/gpupool/gpupool/deploy"
	"github.com/gpupool/gpupool/ingest"
	"github.com/gpupool/gpupool/reports"
	"github.com/gpupool/gpupool/reports/billing"
	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/scheduler/audit"
	"github.com/gpupool/gpupool/scheduler/placement"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
	"github.com/gpupool/gpupool/store/grants"
)

// chDB cannot run the access-control statements: clickhouse-local, which it is, keeps
// users in users.xml only, with no writable access storage, so CREATE ROLE, GRANT
// and CREATE ROW POLICY all fail there (ACCESS_STORAGE_FOR_INSERTION_NOT_FOUND once
// access management is enabled; ACCESS_DENIED before). The tests here do what chDB
// can: parse every statement of the DDL, run its ALTERs, check every name it grants
// exists once migrated, and hold each service role to the statements its component
// really runs. store/grants' server test (GPUPOOL_TEST_CLICKHOUSE) creates the roles
// and logs in as them.

// recorder is a store that keeps every statement run through it.
type recorder struct {
	store.Store
	mu    sync.Mutex
	stmts []recorded
}

// recorded is one statement: SQL with its parameters, or an Insert into a table.
type recorded struct {
	sql    string
	params store.Params
	insert string
}

func (r *recorder) add(q recorded) {
	r.mu.Lock()
	r.stmts = append(r.stmts, q)
	r.mu.Unlock()
}

func (r *recorder) Exec(ctx context.Context, sql string, params store.Params) error {
	r.add(recorded{sql: sql, params: params})
	return r.Store.Exec(ctx, sql, params)
}

func (r *recorder) Query(ctx context.Context, sql string, params store.Params) (*store.Result, error) {
	r.add(recorded{sql: sql, params: params})
	return r.Store.Query(ctx, sql, params)
}

func (r *recorder) Insert(ctx context.Context, table string, b *store.Block, token string) error {
	r.add(recorded{insert: table})
	return r.Store.Insert(ctx, table, b, token)
}

// schemaObject is a table or view of the migrated database.
type schemaObject struct {
	engine  string
	definer bool     // SQL SECURITY DEFINER
	reads   []string // for a view: the objects its query names
	teamCol bool
}

// migratedSchema migrates a fresh database, runs the plan's ALTERs, and describes
// every object.
func migratedSchema(t *testing.T, s *chdb.Store, pl *grants.Plan) map[string]*schemaObject {
	t.Helper()
	ctx := t.Context()
	if _, err := store.Migrate(ctx, s, schemas.MigrationParams{RawTTLDays: 3650}); err != nil {
		t.Fatal(err)
	}
	for _, q := range pl.Statements() {
		if strings.HasPrefix(q, "ALTER TABLE ") {
			if err := s.Exec(ctx, q, nil); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	res, err := s.Query(ctx, `SELECT name, engine, create_table_query, as_select,
    name IN (SELECT table FROM system.columns WHERE database = currentDatabase() AND name = 'team') AS team
FROM system.tables WHERE database = currentDatabase()`, nil)
	if err != nil {
		t.Fatal(err)
	}
	objs := map[string]*schemaObject{}
	for i := range res.Rows {
		name, _ := res.String(i, "name")
		engine, _ := res.String(i, "engine")
		create, _ := res.String(i, "create_table_query")
		team, _ := res.Int(i, "team")
		objs[name] = &schemaObject{engine: engine, definer: strings.Contains(create, "SQL SECURITY DEFINER"), teamCol: team == 1}
	}
	for i := range res.Rows {
		name, _ := res.String(i, "name")
		if o := objs[name]; o.engine == "View" {
			sel, _ := res.String(i, "as_select")
			// A parameterised view's text has its parameters (from, to: 0018).
			_, o.reads = astTables(t, s, sel, store.Params{"from": "2026-01-01 00:00:00.000", "to": "2026-01-02 00:00:00.000"}, objs)
		}
	}
	return objs
}

// astTables parses q with ClickHouse's parser and returns the table an INSERT
// writes (if any) and the database's objects the statement reads by name (CTE
// names and system tables are not objects of the database).
func astTables(t *testing.T, s *chdb.Store, q string, params store.Params, objs map[string]*schemaObject) (insert string, reads []string) {
	t.Helper()
	res, err := s.Query(t.Context(), "EXPLAIN AST "+q, params)
	if err != nil {
		t.Fatalf("EXPLAIN AST %s: %v", store.Abbreviate(q), err)
	}
	object := func(name string) (string, bool) {
		name, _, _ = strings.Cut(name, " ") // "segs (alias s)"
		if db, n, ok := strings.Cut(name, "."); ok {
			if db != s.Database() {
				return "", false
			}
			name = n
		}
		_, ok := objs[name]
		return name, ok
	}
	for i := range res.Rows {
		line, _ := res.String(i, "explain")
		line = strings.TrimSpace(line)
		switch {
		case i == 0 && !strings.HasPrefix(line, "InsertQuery") && !strings.HasPrefix(line, "SelectWithUnionQuery"):
			t.Fatalf("a statement that is neither a SELECT nor an INSERT (%s): the roles grant nothing else\n%s", line, q)
		case i == 1 && strings.HasPrefix(line, "Identifier ") && insert == "" && strings.HasPrefix(strings.TrimSpace(fmt.Sprint(res.Rows[0][0])), "InsertQuery"):
			if n, ok := object(strings.TrimPrefix(line, "Identifier ")); ok {
				insert = n
			} else {
				t.Fatalf("an INSERT into %s, which is no table of the database:\n%s", line, q)
			}
		case strings.HasPrefix(line, "TableIdentifier "):
			if n, ok := object(strings.TrimPrefix(line, "TableIdentifier ")); ok && !slices.Contains(reads, n) {
				reads = append(reads, n)
			}
		case strings.HasPrefix(line, "Function "):
			// A parameterised view is read as a table function named after it.
			if n, ok := object(strings.TrimPrefix(line, "Function ")); ok && objs[n].engine == "View" && !slices.Contains(reads, n) {
				reads = append(reads, n)
			}
		}
	}
	return insert, reads
}

// needs turns recorded statements into the grants they need: INSERT on what they
// write, SELECT on what they read, and through every view that runs with the
// reader's rights (SQL SECURITY INVOKER), SELECT on what the view reads.
func needs(t *testing.T, s *chdb.Store, stmts []recorded, objs map[string]*schemaObject) map[grants.Grant]string {
	t.Helper()
	out := map[grants.Grant]string{}
	var read func(name, why string)
	read = func(name, why string) {
		g := grants.Grant{Privilege: grants.Select, Object: name}
		if _, ok := out[g]; ok {
			return
		}
		out[g] = why
		if o := objs[name]; o.engine == "View" && !o.definer {
			for _, r := range o.reads {
				read(r, "through the view "+name)
			}
		}
	}
	for _, q := range stmts {
		if q.insert != "" {
			out[grants.Grant{Privilege: grants.Insert, Object: q.insert}] = "Insert"
			continue
		}
		ins, reads := astTables(t, s, q.sql, q.params, objs)
		why := store.Abbreviate(strings.Join(strings.Fields(q.sql), " "))
		if ins != "" {
			out[grants.Grant{Privilege: grants.Insert, Object: ins}] = why
		}
		for _, r := range reads {
			read(r, why)
		}
	}
	return out
}

// held is every grant of role and of the roles it inherits.
func held(t *testing.T, pl *grants.Plan, role string) map[grants.Grant]bool {
	t.Helper()
	r, ok := pl.Role(role)
	if !ok {
		t.Fatalf("no role %s", role)
	}
	out := map[grants.Grant]bool{}
	for _, g := range r.Grants {
		out[g] = true
	}
	for _, in := range r.Inherits {
		maps.Copy(out, held(t, pl, in))
	}
	return out
}

var t0 = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

// loadFleet writes, as ingest would, an idle job and a busy one, each on an H100
// for three hours, with their processes.
func loadFleet(t *testing.T, st store.Store) {
	t.Helper()
	l := ingest.NewLoader(st, 100000)
	for i, j := range []struct {
		job, team, gpu string
		active         float32
	}{{"k8s/vision/idle", "vision", "GPU-idle", 0}, {"k8s/nlp/busy", "nlp", "GPU-busy", 0.9}} {
		sub := schemas.JobEvent{Job: j.job, Cluster: "c1", Source: schemas.SourceKubernetes, Attempt: 1, TimeMs: t0.Add(-time.Minute).UnixMilli(),
			Event: schemas.EventSubmit, Team: j.team, Project: "p", Pool: "dev", GPUs: 1, Workload: schemas.WorkloadTraining}
		start := schemas.JobEvent{Job: j.job, Cluster: "c1", Source: schemas.SourceKubernetes, Attempt: 1, TimeMs: t0.UnixMilli(),
			Event: schemas.EventStart, Nodes: []string{"n1"}, GPUUUIDs: []string{j.gpu}}
		if err := l.AddJobs(t.Context(), []schemas.JobEvent{sub, start}); err != nil {
			t.Fatal(err)
		}
		for at := t0; at.Before(t0.Add(3 * time.Hour)); at = at.Add(30 * time.Second) {
			g := schemas.NewGPUSample()
			g.TimeMs, g.GPUUUID, g.Card, g.Model, g.FBTotalMiB, g.FBUsedMiB = at.UnixMilli(), j.gpu, "H100-80GB", "NVIDIA H100 80GB HBM3", 81559, 20000
			g.GrEngineActive, g.SMActive, g.DRAMActive, g.GPUUtil, g.PowerW = j.active, j.active, j.active/2, j.active, 100
			b := &schemas.SampleBatch{Cluster: "c1", Node: "n1", GPUs: []schemas.GPUSample{g}, Processes: []schemas.ProcessSample{{
				TimeMs: g.TimeMs, GPUUUID: j.gpu, PID: uint32(100 + i), ProcessName: "python3", Job: j.job, FBUsedMiB: 20000, SMUtil: j.active}}}
			if err := l.AddSamples(t.Context(), b); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := l.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// exercise is what a component does with the store, run as the role its user holds.
type exercise struct {
	role string
	run  func(t *testing.T, st store.Store)
}

// exercises run, for each role a component's user holds, what that component does
// with the store. They run in this order on one database, so each finds the data
// of those before it (samples, prices, findings).
var exercises = []exercise{
	{"gpupool_ingest", func(t *testing.T, st store.Store) {
		loadFleet(t, st)
		// Node restriction: the identity of the jobs of a batch of job events.
		ids, err := ingest.LookupJobIdentities(t.Context(), st, []string{"k8s/vision/idle", "k8s/unknown/1"})
		if err != nil {
			t.Fatal(err)
		}
		if got := ids["k8s/vision/idle"]; got != (ingest.JobIdentity{Cluster: "c1", Team: "vision", Project: "p"}) || len(ids) != 1 {
			t.Errorf("job identities %+v", ids)
		}
	}},
	{"gpupool_pricing", func(t *testing.T, st store.Store) {
		// gpupool pricebook load and check.
		rows, err := pricebook.Parse(bytes.NewReader(deploy.PriceBookExample))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pricebook.Load(t.Context(), st, rows); err != nil {
			t.Fatal(err)
		}
		if _, err := pricebook.Check(t.Context(), st, t0, t0.Add(3*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}},
	{"gpupool_analyzer", func(t *testing.T, st store.Store) {
		svc, err := analyzer.New(analyzer.DefaultConfig(), st)
		if err != nil {
			t.Fatal(err)
		}
		for _, at := range []time.Time{t0.Add(2 * time.Hour), t0.Add(3*time.Hour + time.Minute)} {
			if _, err := svc.Pass(t.Context(), at); err != nil {
				t.Fatal(err)
			}
		}
		fs, err := svc.Findings(t.Context(), t0, t0.Add(4*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if len(fs) == 0 {
			t.Fatal("the analyzer found nothing on an idle job: the exercise misses the findings' writes")
		}
	}},
	{"gpupool_scheduler", func(t *testing.T, st store.Store) {
		rec := audit.NewStoreRecorder(st)
		a := scheduler.Action{ID: "a1", Time: t0.Add(3 * time.Hour), Decision: "stop", Outcome: "dry_run", Job: "k8s/vision/idle", Team: "vision", Pool: "dev", Policy: "idle", DryRun: true}
		if err := rec.Record(t.Context(), []scheduler.Action{a}); err != nil {
			t.Fatal(err)
		}
		if _, err := rec.Actions(t.Context(), scheduler.ActionFilter{Since: t0, Until: t0.Add(4 * time.Hour), Job: a.Job, Decision: a.Decision, Pool: a.Pool, PoliciesOnly: true, Limit: 10}); err != nil {
			t.Fatal(err)
		}
		frag := scheduler.FragmentationSample{Time: t0.Add(3 * time.Hour), Fragmentation: placement.Fragmentation{Cluster: "c1", Card: "H100-80GB", GPUs: 8, Free: 2, Stranded: 2, Waiting: 1}}
		if err := rec.RecordFragmentation(t.Context(), []scheduler.FragmentationSample{frag}); err != nil {
			t.Fatal(err)
		}
		fs, err := audit.NewStoreFindings(st).Findings(t.Context(), t0.Add(4*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if len(fs) == 0 {
			t.Fatal("the scheduler sees no open finding: the exercise misses its reads")
		}
	}},
	{"gpupool_reports", func(t *testing.T, st store.Store) {
		cfg := reports.DefaultConfig()
		cfg.Dir = t.TempDir()
		r, err := billing.NewRunner(cfg, st, billing.WithClock(func() time.Time { return t0.Add(4 * time.Hour) }))
		if err != nil {
			t.Fatal(err)
		}
		p, err := reports.ParsePeriod("2026-03", time.UTC)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := r.Generate(t.Context(), "grants", p, []string{billing.FormatJSON}); err != nil {
			t.Fatal(err)
		}
	}},
	{"gpupool_console", exerciseConsole},
}

// exerciseConsole opens every page and download of the console as an admin
// (who sees everything) over the store, after the other components wrote to it.
func exerciseConsole(t *testing.T, st store.Store) {
	cfg := auth.DefaultConfig()
	cfg.RateLimit = 0
	cfg.TokensFile = filepath.Join(t.TempDir(), "tokens")
	entry := auth.TokenEntry{Name: "admin", Roles: []auth.Role{auth.RoleAdmin}, Hash: auth.HashToken("tok-admin")}
	if err := os.WriteFile(cfg.TokensFile, []byte(entry.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g, err := auth.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := console.New(console.DefaultConfig(), st, g, console.WithClock(func() time.Time { return t0.Add(4 * time.Hour) }))
	if err != nil {
		t.Fatal(err)
	}
	h := c.Handler()
	for _, path := range []string{"/fleet", "/pools", "/jobs", "/jobs/k8s/vision/idle", "/findings", "/actions",
		"/chargeback", "/chargeback.csv", "/chargeback.json", "/chargeback.parquet", "/capacity"} {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("Authorization", "Bearer tok-admin")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Errorf("GET %s: %d %s", path, rec.Code, store.Abbreviate(rec.Body.String()))
		}
	}
}

// TestServiceRolesCoverTheirStatements is least privilege both ways: every object
// a component's statements read or write is granted to its role, and every grant of
// a service role is used by a statement. Each component starts with store.Migrate's
// check that the schema is up to date, which every role must be able to read (the
// console, which opens the store read-only, may: store/grants' server test checks
// every service role passes it).
func TestServiceRolesCoverTheirStatements(t *testing.T) {
	s := chdbtest.Open(t)
	pl, err := grants.Build(grants.Params{DB: s.Database()})
	if err != nil {
		t.Fatal(err)
	}
	objs := migratedSchema(t, s, pl)
	for _, ex := range exercises {
		t.Run(ex.role, func(t *testing.T) {
			rec := &recorder{Store: s}
			if _, err := store.Migrate(t.Context(), rec, schemas.MigrationParams{RawTTLDays: 3650}); err != nil {
				t.Fatal(err)
			}
			ex.run(t, rec)
			need := needs(t, s, rec.stmts, objs)
			have := held(t, pl, ex.role)
			for g, why := range need {
				if !have[g] {
					t.Errorf("%s runs %s on %s (%s) but is not granted it", ex.role, g.Privilege, g.Object, why)
				}
			}
			r, _ := pl.Role(ex.role)
			if !slices.ContainsFunc(grants.ServiceRoles, func(sr grants.Role) bool { return sr.Name == ex.role }) {
				return // finance.sql's pricing role also serves people with clickhouse-client
			}
			for _, g := range r.Grants {
				if _, ok := need[g]; !ok {
					t.Errorf("%s is granted %s on %s, which none of its statements uses", ex.role, g.Privilege, g.Object)
				}
			}
		})
	}
}

// TestEveryServiceRoleIsExercised keeps the exercises in step with the roles.
func TestEveryServiceRoleIsExercised(t *testing.T) {
	for _, r := range grants.ServiceRoles {
		if !slices.ContainsFunc(exercises, func(e exercise) bool { return e.role == r.Name }) {
			t.Errorf("service role %s has no exercise: nothing checks its grants", r.Name)
		}
	}
}

// TestGrantsDDLParses runs every statement of `gpupool migrate --print-grants`, on one
// server and on a cluster, with teams, through ClickHouse's parser: chDB cannot run
// CREATE ROLE, GRANT or CREATE ROW POLICY (see the top of this file), but a
// statement it cannot parse would fail on a server too.
func TestGrantsDDLParses(t *testing.T) {
	s := chdbtest.Open(t)
	if _, err := s.Query(t.Context(), "SELECT formatQuery({q:String}) AS f", store.Params{"q": "CREATE ROW POLICY p ON gpupool.t FOR SELECT USIN team = 'a' TO r"}); err == nil {
		t.Fatal("formatQuery accepted a misspelt row policy: the check below would prove nothing")
	}
	for _, cluster := range []string{"", "gpu_fleet"} {
		pl, err := grants.Build(grants.Params{DB: "gpupool", Cluster: cluster, Teams: []string{"vision", "ml-research"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range pl.Statements() {
			if _, err := s.Query(t.Context(), "SELECT formatQuery({q:String}) AS f", store.Params{"q": q}); err != nil {
				t.Errorf("cluster %q: %v\n%s", cluster, err, q)
			}
		}
	}
}

var createdObject = regexp.MustCompile(`^CREATE (?:OR REPLACE )?(?:TABLE|VIEW|MATERIALIZED VIEW) (?:IF NOT EXISTS )?gpupool\.([a-z_]+) `)

// TestGrantsNameExistingObjects checks every table and view the DDL names exists:
// on one server in a database migrated on chDB, on a cluster among the objects the
// cluster's migrations create (chDB cannot be a cluster), so no grant can rot when
// a migration renames or drops an object.
func TestGrantsNameExistingObjects(t *testing.T) {
	s := chdbtest.Open(t)
	single, err := grants.Build(grants.Params{DB: s.Database(), Teams: []string{"vision"}})
	if err != nil {
		t.Fatal(err)
	}
	objs := migratedSchema(t, s, single)
	named := regexp.MustCompile(regexp.QuoteMeta(s.Database()) + `\.([a-z_]+)`)
	for _, q := range single.Statements() {
		for _, m := range named.FindAllStringSubmatch(q, -1) {
			if objs[m[1]] == nil {
				t.Errorf("%s names %s, which no migration creates", q, m[1])
			}
		}
	}

	ms, err := schemas.Migrations(schemas.MigrationParams{DB: "gpupool", Cluster: "gpu_fleet", RawTTLDays: 1})
	if err != nil {
		t.Fatal(err)
	}
	onCluster := map[string]bool{"schema_migrations": true} // store.Migrate's own table
	for _, m := range ms {
		for _, q := range m.Statements {
			if g := createdObject.FindStringSubmatch(q); g != nil {
				onCluster[g[1]] = true
			}
		}
	}
	vs, err := schemas.Views(schemas.MigrationParams{DB: "gpupool", Cluster: "gpu_fleet", RawTTLDays: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if strings.Contains(v.Statement, " ON CLUSTER `gpu_fleet` ") {
			onCluster[v.Name] = true
		}
	}
	cl, err := grants.Build(grants.Params{DB: "gpupool", Cluster: "gpu_fleet", Teams: []string{"vision"}})
	if err != nil {
		t.Fatal(err)
	}
	namedCl := regexp.MustCompile(`gpupool\.([a-z_]+)`)
	for _, q := range cl.Statements() {
		for _, m := range namedCl.FindAllStringSubmatch(q, -1) {
			if !onCluster[m[1]] {
				t.Errorf("cluster: %s names %s, which the cluster's migrations do not create", q, m[1])
			}
		}
	}
}

// TestTeamObjects keeps the team readers' objects complete and sound: every object
// of the schema with a team column is either a team object or excluded with a
// reason; every team view runs as its definer (a reader could not read it
// otherwise); and every materialized view writes as its definer, so that ingest
// needs INSERT on the raw tables only.
func TestTeamObjects(t *testing.T) {
	s := chdbtest.Open(t)
	pl, err := grants.Build(grants.Params{DB: s.Database(), Teams: []string{"vision"}})
	if err != nil {
		t.Fatal(err)
	}
	objs := migratedSchema(t, s, pl)
	var withTeam []string
	for name, o := range objs {
		if o.teamCol {
			withTeam = append(withTeam, name)
		}
		if o.engine == "MaterializedView" && !o.definer {
			t.Errorf("materialized view %s is not SQL SECURITY DEFINER after the DDL's ALTERs: ingest's inserts would need its target", name)
		}
	}
	slices.Sort(withTeam)
	covered := append(slices.Clone(grants.TeamObjects), slices.Collect(maps.Keys(grants.TeamExcluded))...)
	slices.Sort(covered)
	if !slices.Equal(withTeam, covered) {
		t.Errorf("objects with a team column:\n  %v\nteam objects and exclusions:\n  %v", withTeam, covered)
	}
	for _, o := range grants.TeamObjects {
		if objs[o].engine == "View" && !objs[o].definer {
			t.Errorf("team view %s is SQL SECURITY INVOKER: a team reader would need the tables under it, unfiltered", o)
		}
	}
}

// TestIngestCannotReadFinance: the ingest writer is granted no SELECT on any finance
// object, and only INSERT on the raw tables (plus the schema check, and job_events:
// node restriction reads a job's first owner back, which ingest wrote and reads
// on the bus anyway).
func TestIngestCannotReadFinance(t *testing.T) {
	pl, err := grants.Build(grants.Params{DB: "gpupool"})
	if err != nil {
		t.Fatal(err)
	}
	fin, _ := pl.Role("gpupool_finance")
	ing := held(t, pl, "gpupool_ingest")
	for _, g := range fin.Grants {
		if ing[grants.Grant{Privilege: grants.Select, Object: g.Object}] {
			t.Errorf("gpupool_ingest may read the finance object %s", g.Object)
		}
	}
	for g := range ing {
		if g.Privilege == grants.Select && g.Object != "schema_migrations" && g.Object != "job_events" {
			t.Errorf("gpupool_ingest may read %s", g.Object)
		}
	}
}
