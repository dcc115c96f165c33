package grants_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/clickhouse"
	"github.com/gpupool/gpupool/store/grants"
	"github.com/gpupool/gpupool/store/storetest"
)

// The test in this file needs a ClickHouse server (24.4 or later, for SQL SECURITY)
// with SQL access management for the connecting user: set GPUPOOL_TEST_CLICKHOUSE
// as for store/clickhouse's tests ("localhost:9000" or a DSN). It creates gpupool's
// roles, which are global to the server, and drops them after: it skips when the
// server already has them, so it never touches a real installation's roles.

const serverEnv = "GPUPOOL_TEST_CLICKHOUSE"

// accessDenied is ClickHouse's ACCESS_DENIED error code.
const accessDenied = 497

// TestServerRoles applies the DDL on a real server, creates a user per role, and
// checks as those users: a team reader sees only its team's rows (of a table and of
// a definer view), everyone else sees every row, the ingest writer may insert
// samples but read neither samples nor finance views, and each service passes
// store.Migrate's start-up check.
func TestServerRoles(t *testing.T) {
	target := os.Getenv(serverEnv)
	if target == "" {
		t.Skip("GPUPOOL_TEST_CLICKHOUSE not set: no ClickHouse server to create roles on (chDB has no writable access storage; set it to host:port to run)")
	}
	ctx := t.Context()
	cfg := clickhouse.DefaultConfig()
	if strings.Contains(target, "://") {
		var err error
		if cfg, err = clickhouse.ParseDSN(target); err != nil {
			t.Fatalf("%s: %v", serverEnv, err)
		}
	} else {
		cfg.Addr = strings.Split(target, ",")
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	suffix := hex.EncodeToString(b[:])
	cfg.Database = "gpupool_test_" + suffix
	admin, err := clickhouse.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if n := storetest.N(t, admin, "SELECT count() AS n FROM system.roles WHERE startsWith(name, 'gpupool_')"); n > 0 {
		t.Skipf("the server already has %d gpupool_ roles: not touching them", n)
	}
	pl, err := grants.Build(grants.Params{DB: cfg.Database, Cluster: cfg.Cluster, Teams: []string{"vision", "nlp"}})
	if err != nil {
		t.Fatal(err)
	}
	mp := schemas.MigrationParams{Cluster: cfg.Cluster, RawTTLDays: 30}
	t.Cleanup(func() { dropAll(t, admin, pl, cfg, suffix) })
	if _, err := store.Migrate(ctx, admin, mp); err != nil {
		t.Fatal(err)
	}
	for _, q := range pl.Statements() {
		if err := admin.Exec(ctx, q, nil); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	err = admin.Exec(ctx, `INSERT INTO findings (id, kind, state, episode, team, first_seen, last_seen, updated_at)
VALUES ('f1', 'idle', 'open', 1, 'vision', now64(3), now64(3), now64(3)), ('f2', 'idle', 'open', 1, 'nlp', now64(3), now64(3), now64(3))`, nil)
	if err != nil {
		t.Fatal(err)
	}

	as := func(role string) store.Store {
		t.Helper()
		user := userName(suffix, role)
		on := mp.OnCluster()
		for _, q := range []string{
			fmt.Sprintf("CREATE USER IF NOT EXISTS %s %s IDENTIFIED WITH sha256_password BY 'test-%s' DEFAULT ROLE %s", user, on, suffix, schemas.QuoteIdent(role)),
			fmt.Sprintf("GRANT %s %s TO %s", on, schemas.QuoteIdent(role), user),
		} {
			if err := admin.Exec(ctx, q, nil); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		c := cfg
		c.Username, c.Password = user, "test-"+suffix
		s, err := clickhouse.Open(ctx, c)
		if err != nil {
			t.Fatalf("open as %s: %v", role, err)
		}
		t.Cleanup(func() { _ = s.Close() })
		if slices.ContainsFunc(grants.ServiceRoles, func(r grants.Role) bool { return r.Name == role }) {
			if _, err := store.Migrate(ctx, s, mp); err != nil {
				t.Errorf("%s cannot pass the start-up schema check: %v", role, err)
			}
		}
		return s
	}
	teams := func(s store.Store, object string) []string {
		t.Helper()
		res, err := s.Query(ctx, "SELECT DISTINCT toString(team) AS team FROM "+object+" ORDER BY team", nil)
		if err != nil {
			t.Fatalf("SELECT FROM %s: %v", object, err)
		}
		var out []string
		for i := range res.Rows {
			v, _ := res.String(i, "team")
			out = append(out, v)
		}
		return out
	}
	denied := func(who string, err error) {
		t.Helper()
		var ex *ch.Exception
		if !errors.As(err, &ex) || ex.Code != accessDenied {
			t.Errorf("%s: err = %v, want ACCESS_DENIED", who, err)
		}
	}

	vision := as(grants.TeamRole("vision"))
	for _, o := range []string{"findings", "findings_open"} {
		if got := teams(vision, o); !slices.Equal(got, []string{"vision"}) {
			t.Errorf("team vision sees the teams %v in %s, want only vision", got, o)
		}
	}
	_, err = vision.Query(ctx, "SELECT count() FROM gpu_samples", nil)
	denied("team vision reading gpu_samples", err)
	for _, s := range []struct {
		name string
		st   store.Store
	}{{"admin", admin}, {"gpupool_grafana", as("gpupool_grafana")}, {"gpupool_scheduler", as("gpupool_scheduler")}} {
		if got := teams(s.st, "findings_open"); !slices.Equal(got, []string{"nlp", "vision"}) {
			t.Errorf("%s sees the teams %v in findings_open, want both: the unscoped policy leaves out only team readers", s.name, got)
		}
	}

	ingest := as("gpupool_ingest")
	if err := ingest.Exec(ctx, "INSERT INTO gpu_samples (ts, cluster, node, gpu_uuid) VALUES (now64(3), 'c1', 'n1', 'GPU-1')", nil); err != nil {
		t.Errorf("the ingest writer cannot insert samples: %v", err)
	}
	// Ingest writes the rollups itself (migrations 0020, 0021); nobody else may.
	for table, row := range map[string]string{
		"process_minute": "INSERT INTO process_minute (minute, gpu_uuid, job, samples) VALUES (toStartOfMinute(now()), 'GPU-1', 'j', 1)",
		"gpu_minute":     "INSERT INTO gpu_minute (minute, gpu_uuid, samples) VALUES (toStartOfMinute(now()), 'GPU-1', 1)",
		"gpu_hour":       "INSERT INTO gpu_hour (hour, gpu_uuid, samples) VALUES (toStartOfHour(now()), 'GPU-1', 1)",
	} {
		if err := ingest.Exec(ctx, row, nil); err != nil {
			t.Errorf("the ingest writer cannot insert %s rows: %v", table, err)
		}
		denied("the analyzer writing "+table, as("gpupool_analyzer").Exec(ctx, row, nil))
		denied("the scheduler writing "+table, as("gpupool_scheduler").Exec(ctx, row, nil))
	}
	denied("the ingest writer writing chargeback_hourly", ingest.Exec(ctx, "INSERT INTO chargeback_hourly (hour, gpu_uuid) VALUES (toStartOfHour(now()), 'GPU-1')", nil))
	for _, o := range []string{"chargeback_daily", "chargeback_priced", "price_book", "gpu_samples", "gpu_minute"} {
		_, err := ingest.Query(ctx, "SELECT count() FROM "+o, nil)
		denied("the ingest writer reading "+o, err)
	}
}

// userName is the test's user for role.
func userName(suffix, role string) string {
	return schemas.QuoteIdent("gpupool_test_" + suffix + "_" + strings.TrimPrefix(role, "gpupool_"))
}

// dropAll drops what the test created: users, row policies, roles, the settings
// profile, the database.
func dropAll(t *testing.T, admin store.Store, pl *grants.Plan, cfg clickhouse.Config, suffix string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	on := (schemas.MigrationParams{Cluster: cfg.Cluster}).OnCluster()
	var qs []string
	for _, r := range pl.Roles {
		qs = append(qs, fmt.Sprintf("DROP USER IF EXISTS %s %s", userName(suffix, r.Name), on))
	}
	for _, po := range pl.Policies {
		for _, obj := range []string{po.Object, po.Object + "_local"} {
			qs = append(qs, fmt.Sprintf("DROP ROW POLICY IF EXISTS %s %s ON %s.%s", schemas.QuoteIdent(po.Name), on, cfg.Database, obj))
		}
	}
	for _, r := range slices.Backward(pl.Roles) {
		qs = append(qs, fmt.Sprintf("DROP ROLE IF EXISTS %s %s", schemas.QuoteIdent(r.Name), on))
	}
	for _, p := range pl.Profiles {
		qs = append(qs, fmt.Sprintf("DROP SETTINGS PROFILE IF EXISTS %s %s", p.Name, on))
	}
	qs = append(qs, fmt.Sprintf("DROP DATABASE IF EXISTS %s %s SYNC", schemas.QuoteIdent(cfg.Database), on))
	for _, q := range qs {
		if err := admin.Exec(ctx, q, nil); err != nil {
			t.Logf("cleanup: %s: %v", q, err)
		}
	}
}
