package grants

import (
	"fmt"
	"regexp"
	"slices"

	"github.com/gpupool/gpupool/schemas"
)

// Privileges a Grant gives.
const (
	Select = "SELECT"
	Insert = "INSERT"
)

// TeamsRole is the role every team reader is granted: SELECT on the objects that
// carry a team, and the one role the unscoped row policies leave out, so that
// everyone else keeps seeing every row.
const TeamsRole = "gpupool_teams"

// TeamRolePrefix starts the name of a team's reader role and of its row policies:
// gpupool_team_<team>.
const TeamRolePrefix = "gpupool_team_"

// UnscopedPolicy names the row policy on every object with team policies that lets
// every user and role but the team readers see all rows: once an object has a row
// policy, ClickHouse shows a user no row that no policy of theirs allows.
const UnscopedPolicy = "gpupool_unscoped"

// Params says what the DDL is for.
type Params struct {
	// DB is the database holding gpupool's tables.
	DB string
	// Cluster, when set, makes every statement run ON CLUSTER and grants each
	// sharded table's <table>_local beside its Distributed table.
	Cluster string
	// Teams get a reader role each, gpupool_team_<team>; none: no team roles and no
	// row policies.
	Teams []string
}

var teamRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// Validate checks the parameters are safe to put into DDL.
func (p Params) Validate() error {
	if err := (schemas.MigrationParams{DB: p.DB, Cluster: p.Cluster, RawTTLDays: 1}).Validate(); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, t := range p.Teams {
		if !teamRe.MatchString(t) {
			return fmt.Errorf("team %q: want letters, digits, _, . and -, starting with a letter or digit, at most 64", t)
		}
		if seen[t] {
			return fmt.Errorf("team %q named twice", t)
		}
		seen[t] = true
	}
	return nil
}

// Grant is one privilege on one object of the database ("*": all of them).
type Grant struct {
	Privilege string
	Object    string
}

// Role is one ClickHouse role.
type Role struct {
	Name string
	// About says who the role is for; the DDL carries it as a comment.
	About string
	// Grants are the role's privileges; Inherits the roles granted to it.
	Grants   []Grant
	Inherits []string
	// Team, for a team reader, is the team its row policies let it see.
	Team string
}

// Policy is one row policy: the rows of Object that To (a role, or ALL EXCEPT one)
// may select.
type Policy struct {
	Name   string
	Object string
	Using  string
	To     string
}

// Profile is a settings profile: its name and SETTINGS clause.
type Profile struct {
	Name     string
	Settings string
}

// Plan is what the DDL creates, in the order it creates it.
type Plan struct {
	Params Params
	// Definer lists the views and materialized views switched to SQL SECURITY
	// DEFINER: they read (and, for a materialized view, write) with the rights of
	// the administrator who runs the DDL, so a role needs the view and not the
	// tables under it.
	Definer  []string
	Profiles []Profile
	Roles    []Role
	Policies []Policy
	// sharded are the tables that are Distributed over <table>_local on a cluster.
	sharded map[string]bool
}

// Role returns the plan's role called name.
func (pl *Plan) Role(name string) (Role, bool) {
	i := slices.IndexFunc(pl.Roles, func(r Role) bool { return r.Name == name })
	if i < 0 {
		return Role{}, false
	}
	return pl.Roles[i], true
}

// schemaMigrations is the table every service reads at start to check the schema is
// up to date (store.Migrate changes nothing when it is).
const schemaMigrations = "schema_migrations"

// ServiceRoles are the roles of gpupool's services, each what the component's own
// statements need (deploy/clickhouse's tests record them on chDB and compare).
var ServiceRoles = []Role{
	{
		Name:  "gpupool_ingest",
		About: "gpupool ingest: appends samples, their rollups (process_minute, gpu_minute, gpu_hour), the fleet's state per GPU and minute for the last hours (gpu_state_minute) and job events; reads a job's first cluster, team, project and queue back from job_events, to refuse events that change them",
		Grants: []Grant{
			{Insert, "gpu_samples"}, {Insert, "gpu_state_minute"}, {Insert, "process_samples"}, {Insert, "process_minute"},
			{Insert, "gpu_minute"}, {Insert, "gpu_hour"}, {Insert, "job_events"}, {Select, "job_events"},
			{Select, schemaMigrations},
		},
	},
	{
		Name:  "gpupool_analyzer",
		About: "gpupool analyzer: reads samples, rollups, jobs and prices; writes findings and the hourly chargeback",
		Grants: []Grant{
			{Select, "gpu_samples"}, {Select, "process_samples"}, {Select, "job_events"}, {Select, "jobs"},
			{Select, "gpu_minute"}, {Select, "gpu_hour"}, {Select, "process_minute"},
			{Select, "price_book_current"}, {Select, "price_timeline"}, {Select, "chargeback_settings"},
			{Select, "chargeback_hourly"}, {Insert, "chargeback_hourly"},
			{Insert, "chargeback_job_hourly"},
			{Select, "chargeback_refreshes"}, {Insert, "chargeback_refreshes"},
			{Select, "findings"}, {Insert, "findings"},
			{Select, schemaMigrations},
		},
	},
	{
		Name:  "gpupool_scheduler",
		About: "gpupool scheduler: keeps its audit trail in actions and its fragmentation figure in scheduler_fragmentation, and reads the open findings with their jobs",
		Grants: []Grant{
			{Select, "actions"}, {Insert, "actions"}, {Insert, "scheduler_fragmentation"}, {Select, "findings_open"},
			{Select, "jobs"}, {Select, "job_events"},
			{Select, schemaMigrations},
		},
	},
	{
		Name:  "gpupool_reports",
		About: "gpupool reports: the finance views, and the chargeback refresh before each report (reports.refresh)",
		Grants: []Grant{
			{Select, "job_events"}, {Select, "jobs"},
			{Select, "gpu_minute"}, {Select, "gpu_hour"}, {Select, "process_minute"},
			{Select, "chargeback_hourly"}, {Insert, "chargeback_hourly"},
			{Insert, "chargeback_job_hourly"},
			{Select, "chargeback_refreshes"}, {Insert, "chargeback_refreshes"},
			{Select, schemaMigrations},
		},
		Inherits: []string{"gpupool_finance"},
	},
	{
		Name:  "gpupool_console",
		About: "gpupool console (store opened read-only): the finance views (among them the console's own: GPU activity, the actions log, the findings' history), the jobs, and the tables the analyzer's finding episodes and the scheduler's audit trail read (findings, actions)",
		Grants: []Grant{
			{Select, "jobs"}, {Select, "job_events"}, {Select, "findings"}, {Select, "actions"},
			{Select, schemaMigrations},
		},
		Inherits: []string{"gpupool_finance"},
	},
}

// TeamObjects are the tables and views a team reader may select from, each with a
// row policy keeping it to its team's rows. Every one carries a team on every row;
// the views among them are SQL SECURITY DEFINER (finance.sql), so reading them needs
// no grant on the tables under them.
var TeamObjects = []string{
	"findings", "findings_open", "actions", "finding_history", "actions_log",
	"chargeback_jobs", "chargeback_priced", "chargeback_job_priced", "chargeback_daily", "chargeback_monthly",
	"idle_cost", "queue_wait", "unallocated_by_team",
	"job_failures", "failure_summary", "job_output", "output_summary", "off_peak",
}

// job_failures_between and job_output_between (migration 0018), parameterised
// views, are no team objects: they are read as table functions, system.columns
// lists no columns for them, and gpupool sets no row policy on them. The finance
// role and the reports read them; team readers read job_failures and job_output,
// whose row policies keep them to their team's rows.

// TeamExcluded are the objects with a team column that team readers do not get, and
// why. A test keeps TeamObjects and TeamExcluded together equal to every object of
// the migrated schema with a team column.
var TeamExcluded = map[string]string{
	"job_events": "only a job's submit event carries its team: a team filter would drop its start and end; chargeback_jobs has the merged job",
	"jobs":       "a SQL SECURITY INVOKER view over job_events: reading it needs job_events; chargeback_jobs has the same jobs with their team",
}

// TeamRole is the name of team's reader role (and of its row policies).
func TeamRole(team string) string { return TeamRolePrefix + team }

// teamRole is the reader role of one team.
func teamRole(team string) Role {
	return Role{
		Name:     TeamRole(team),
		About:    "team " + team + ": reads its own rows of the team objects",
		Inherits: []string{TeamsRole},
		Team:     team,
	}
}

// teamsRole is the role every team reader inherits.
func teamsRole() Role {
	r := Role{Name: TeamsRole, About: "every team reader: SELECT on the team objects; each team's row policies keep it to its rows"}
	for _, o := range TeamObjects {
		r.Grants = append(r.Grants, Grant{Select, o})
	}
	return r
}
