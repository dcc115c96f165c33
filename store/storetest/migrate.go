package storetest

import (
	"context"
	"strings"
	"testing"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
)

func testMigrateIdempotent(t *testing.T, b Backend) {
	ctx := t.Context()
	s := b.Open(t)
	p := MigrationParams(s)
	first, err := store.Migrate(ctx, s, p)
	if err != nil {
		t.Fatal(err)
	}
	ms, _ := schemas.Migrations(p)
	if len(first.Applied) != len(ms) {
		t.Fatalf("first run applied %v, want all %d migrations", first.Applied, len(ms))
	}
	second, err := store.Migrate(ctx, s, p)
	if err != nil {
		t.Fatalf("second run: %v", err)
	}
	if len(second.Applied) != 0 || len(second.Skipped) != len(ms) {
		t.Fatalf("second run applied %v skipped %v, want nothing applied", second.Applied, second.Skipped)
	}
	// Re-running every statement (as after a crash mid-migration) is harmless too.
	for _, m := range ms {
		for _, q := range m.Statements {
			if err := s.Exec(ctx, q, nil); err != nil {
				t.Fatalf("migration %d re-run: %v", m.Version, err)
			}
		}
	}
	checkMigratedTables(t, s)
	// An edited migration is refused.
	exec(t, s, "INSERT INTO schema_migrations VALUES (1, 'samples', 'edited', now64(3))")
	if _, err := store.Migrate(ctx, s, p); err == nil || !strings.Contains(err.Error(), "edited") {
		t.Fatalf("migrate with a changed checksum: err = %v, want a refusal", err)
	}
}

// checkMigratedTables checks the tables of a migrated database.
func checkMigratedTables(t *testing.T, s store.Store) {
	t.Helper()
	ctx := t.Context()
	for _, table := range []string{"gpu_samples", "process_samples", "job_events", "jobs", "schema_migrations"} {
		res, err := s.Query(ctx, "SELECT count() AS n FROM system.tables WHERE database = currentDatabase() AND name = {t:String}", store.Params{"t": table})
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := res.Int(0, "n"); n != 1 {
			t.Errorf("table %s missing after migrate", table)
		}
	}
	// 0019: process_samples merges one column at a time.
	res, err := s.Query(ctx, "SELECT engine_full FROM system.tables WHERE database = currentDatabase() AND name = 'process_samples'", nil)
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := res.String(0, "engine_full"); !strings.Contains(e, "vertical_merge_algorithm_min_columns_to_activate = 1") {
		t.Errorf("process_samples after migrate: %s, want vertical merges from one column (0019)", e)
	}
}

// execCounter counts the statements run through Exec (DDL, INSERT).
type execCounter struct {
	store.Store
	execs []string
}

func (c *execCounter) Exec(ctx context.Context, sql string, params store.Params) error {
	c.execs = append(c.execs, sql)
	return c.Store.Exec(ctx, sql, params)
}

// testMigrateUpToDateOnlyReads: on a schema already up to date Migrate runs nothing
// but its read of schema_migrations, so a service whose user may only read that
// table (store/grants) starts.
func testMigrateUpToDateOnlyReads(t *testing.T, b Backend) {
	s := b.migrated(t)
	p := MigrationParams(s)
	c := &execCounter{Store: s}
	rep, err := store.Migrate(t.Context(), c, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.execs) != 0 || len(rep.Applied) != 0 || len(rep.Skipped) == 0 {
		t.Fatalf("second Migrate ran %q, applied %v, skipped %v: want no statement and everything skipped", c.execs, rep.Applied, rep.Skipped)
	}
}

// testMigrateAddsActor upgrades a database made before 0006: the actions rows
// written then read back with an empty actor, and new rows keep theirs.
func testMigrateAddsActor(t *testing.T, b Backend) {
	ctx := t.Context()
	s := b.Open(t)
	p := MigrationParams(s)
	ms, err := schemas.Migrations(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.Version >= 6 {
			break
		}
		exec(t, s, m.Statements...)
	}
	exec(t, s, "INSERT INTO actions (ts, id, decision, outcome) VALUES (now64(3), 'old', 'admit', 'ok')")
	if _, err := store.Migrate(ctx, s, p); err != nil {
		t.Fatal(err)
	}
	exec(t, s, "INSERT INTO actions (ts, id, decision, outcome, actor) VALUES (now64(3), 'new', 'submit', 'ok', 'token:alice')")
	res, err := s.Query(ctx, "SELECT id, actor FROM actions ORDER BY id", nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := range res.Rows {
		id, _ := res.String(i, "id")
		actor, _ := res.String(i, "actor")
		got = append(got, id+"="+actor)
	}
	if strings.Join(got, " ") != "new=token:alice old=" {
		t.Fatalf("rows %v", got)
	}
}
