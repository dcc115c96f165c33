package chdb_test

import (
	"compress/gzip"
	"context"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

// releasedSchema is the DDL of migrations 0001–0021 as they were released, before
// their view statements moved to schemas/views (issue 41), rendered for the
// database {{DB}}, each migration after a line "-- migration NNNN name checksum".
// It is frozen: it stands for every store migrated before that change.
const releasedSchema = "testdata/schema_0021_released.sql.gz"

var releasedHeader = regexp.MustCompile(`^-- migration (\d{4}) ([a-z_0-9]+) ([0-9a-f]{16})$`)

// migrateReleased builds on s the schema a store migrated by the released
// migrations holds, schema_migrations rows with the released checksums included.
func migrateReleased(t *testing.T, s *chdb.Store) {
	t.Helper()
	ctx := t.Context()
	f, err := os.Open(releasedSchema)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", releasedSchema, err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: %v", releasedSchema, err)
	}
	src := strings.ReplaceAll(string(raw), "{{DB}}", s.Database())
	if err := s.Exec(ctx, "CREATE TABLE IF NOT EXISTS schema_migrations (version UInt32, name String, checksum String, applied_at DateTime64(3, 'UTC')) ENGINE = ReplacingMergeTree(applied_at) ORDER BY version", nil); err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, line := range strings.Split(src, "\n") {
		if g := releasedHeader.FindStringSubmatch(line); g != nil {
			rows = append(rows, "("+g[1]+", '"+g[2]+"', '"+g[3]+"', now64(3))")
		}
	}
	if len(rows) != 21 {
		t.Fatalf("%s: %d migration headers, want 21", releasedSchema, len(rows))
	}
	for _, q := range schemas.SplitStatements(src) {
		if err := s.Exec(ctx, q, nil); err != nil {
			t.Fatalf("released DDL: %v\n%.200s", err, q)
		}
	}
	if err := s.Exec(ctx, "INSERT INTO schema_migrations VALUES "+strings.Join(rows, ", "), nil); err != nil {
		t.Fatal(err)
	}
}

// schemaObjects returns every table and view of s's database with its definition
// and columns, the database's name replaced by DB: what two stores must share to
// hold the same schema.
func schemaObjects(t *testing.T, s store.Store) map[string]string {
	t.Helper()
	res, err := s.Query(context.Background(), `
SELECT t.name AS name, t.engine AS engine, t.create_table_query AS ddl,
       arrayStringConcat(arrayMap(x -> concat(x.2, ' ', x.3), arraySort(groupArray((c.position, c.name, c.type)))), ', ') AS columns
FROM system.tables AS t
LEFT JOIN (SELECT table, name, type, position FROM system.columns WHERE database = currentDatabase()) AS c ON c.table = t.name
WHERE t.database = currentDatabase() AND t.name != 'schema_migrations'
GROUP BY t.name, t.engine, t.create_table_query`, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for i := range res.Rows {
		name, _ := res.String(i, "name")
		engine, _ := res.String(i, "engine")
		ddl, _ := res.String(i, "ddl")
		cols, _ := res.String(i, "columns")
		out[name] = engine + "\n" + strings.ReplaceAll(ddl, s.Database()+".", "DB.") + "\ncolumns: " + cols
	}
	return out
}

// sinceReleased are the migrations after the released 0021, and
// alteredSinceReleased the tables they change and the views changed since
// (the released schema's differ; migrating must still end equal to fresh).
var (
	sinceReleased        = []int{22, 23, 24, 25, 26, 27}
	alteredSinceReleased = map[string]bool{
		"process_minute": true, // 0022: sample_times
		"job_events":     true, // 0023: mig_profile, mig_instances; 0024: gpu_fraction, sharing
		// Views reading 0023's and 0024's columns: the jobs view carries them,
		// and queue-wait GPU-hours weigh a MIG job's instances by their slices
		// and a fraction by its share.
		"jobs": true, "chargeback_jobs": true, "chargeback_priced": true, "chargeback_job_priced": true,
		// 0025: the scheduler's fragmentation samples, and the view over them.
		"scheduler_fragmentation": true, "fragmentation_hourly": true,
		// 0026 and 0027: the fleet's state now per GPU and minute for the last
		// hours, and the views over it and gpu_samples.
		"gpu_state_minute": true, "gpu_state_recent": true,
		// Views the console and the reports read instead of tables (issue 41).
		"gpu_activity_hourly": true, "gpu_activity_minutely": true, "process_activity_minutely": true,
		"gpu_state_between": true, "data_clock": true, "chargeback_version": true,
		"finding_history": true, "actions_log": true,
	}
)

// TestMigrateViewsFreshEqualsReleased: a store migrated by the released migrations
// (views defined in them) and a fresh one (views from schemas/views) end with the
// same tables and views, definitions and columns alike; the released store runs no
// migration, only the views, and its recorded checksums are accepted.
func TestMigrateViewsFreshEqualsReleased(t *testing.T) {
	ctx := t.Context()
	fresh := chdbtest.Open(t)
	if _, err := store.Migrate(ctx, fresh, schemas.MigrationParams{RawTTLDays: 3650}); err != nil {
		t.Fatal(err)
	}
	released := chdbtest.Open(t)
	migrateReleased(t, released)
	before := schemaObjects(t, released)
	rep, err := store.Migrate(ctx, released, schemas.MigrationParams{RawTTLDays: 3650})
	if err != nil {
		t.Fatalf("migrate a store at the released 0021: %v", err)
	}
	vs, err := schemas.Views(schemas.MigrationParams{DB: released.Database(), RawTTLDays: 3650})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Applied, sinceReleased) || len(rep.Views) != len(vs) {
		t.Errorf("released store: applied %v and %d views, want the migrations since 0021 %v and all %d views", rep.Applied, len(rep.Views), sinceReleased, len(vs))
	}
	got, want := schemaObjects(t, released), schemaObjects(t, fresh)
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s differs:\nreleased then migrated: %s\nfresh: %s", name, got[name], w)
		}
		if before[name] != w && !alteredSinceReleased[name] {
			t.Errorf("%s of the released schema differs from the fresh one's:\nreleased: %s\nfresh: %s", name, before[name], w)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s is in the migrated released store, not in a fresh one", name)
		}
	}
	if len(want) < len(vs)+10 {
		t.Fatalf("fresh store has %d objects, want the %d views and the tables", len(want), len(vs))
	}
}

// TestMigrateReappliesChangedViews: the views are re-created when the checksum
// recorded for them is not the binary's (a view file changed), and only then.
func TestMigrateReappliesChangedViews(t *testing.T) {
	ctx := t.Context()
	s := chdbtest.Open(t)
	p := schemas.MigrationParams{RawTTLDays: 3650}
	first, err := store.Migrate(ctx, s, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Views) == 0 || first.Views[0] == "" {
		t.Fatalf("first migrate created views %v, want all", first.Views)
	}
	if second, err := store.Migrate(ctx, s, p); err != nil || len(second.Views) != 0 {
		t.Fatalf("second migrate: views %v, err %v; want none re-created", second.Views, err)
	}
	if err := s.Exec(ctx, "INSERT INTO schema_migrations VALUES (0, 'views', 'an older view text', now64(3) + 1)", nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Exec(ctx, "DROP VIEW chargeback_monthly", nil); err != nil {
		t.Fatal(err)
	}
	third, err := store.Migrate(ctx, s, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(third.Applied) != 0 || len(third.Views) != len(first.Views) {
		t.Fatalf("after a view changed: applied %v, views %v; want no migration and every view", third.Applied, third.Views)
	}
	if _, err := s.Query(ctx, "SELECT * FROM chargeback_monthly LIMIT 1", nil); err != nil {
		t.Errorf("chargeback_monthly after re-applying the views: %v", err)
	}
}
