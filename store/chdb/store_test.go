package chdb_test

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

func TestMain(m *testing.M) { chdbtest.Main(m) }

func TestOpenMissingLibrary(t *testing.T) {
	cfg := chdbtest.Config(t)
	cfg.LibPath = filepath.Join(t.TempDir(), "no-such-libchdb.so")
	_, err := chdb.Open(cfg)
	if !errors.Is(err, chdb.ErrLibraryMissing) {
		t.Fatalf("Open with a missing library: err = %v, want ErrLibraryMissing", err)
	}
	for _, want := range []string{"no-such-libchdb.so", "make deps", "GPUPOOL_CHDB_LIB"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestOneDataPathPerProcess(t *testing.T) {
	s := chdbtest.Open(t)
	cfg := chdbtest.Config(t)
	cfg.Path = t.TempDir()
	_, err := chdb.Open(cfg)
	if !errors.Is(err, chdb.ErrPathInUse) {
		t.Fatalf("second data path while %s is open: err = %v, want ErrPathInUse", s.Path(), err)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*chdb.Config)
		want string
	}{
		{"no path", func(c *chdb.Config) { c.Path = "" }, "path"},
		{"bad database", func(c *chdb.Config) { c.Database = "a-b" }, "database"},
		{"no conns", func(c *chdb.Config) { c.Conns = 0 }, "conns"},
		{"tiny memory limit", func(c *chdb.Config) { c.MemoryLimitMiB = 64 }, "memory_limit_mib"},
		{"negative threads", func(c *chdb.Config) { c.MaxThreads = -1 }, "mark_cache_mib"},
		{"negative arenas", func(c *chdb.Config) { c.Arenas = -1 }, "arenas"},
		{"negative merge threads", func(c *chdb.Config) { c.MergeThreads = -1 }, "merge_threads"},
		{"too many merge threads", func(c *chdb.Config) { c.MergeThreads = 257 }, "merge_threads"},
		{"negative code release interval", func(c *chdb.Config) { c.ReleaseCodeEvery = -time.Minute }, "release_code_every"},
		{"code release every millisecond", func(c *chdb.Config) { c.ReleaseCodeEvery = time.Millisecond }, "release_code_every"},
		{"code release without the first", func(c *chdb.Config) { c.ReleaseCodeEvery, c.ReleaseStartupCode = time.Minute, false }, "release_code_every"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := chdb.DefaultConfig()
			tt.edit(&cfg)
			if err := cfg.Validate(); err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want an error naming %q", err, tt.want)
			}
		})
	}
}

// TestEngineSettings checks that the configured settings reach the engine:
// max_threads is per connection, so a store opened with it sees it even though
// the process's engine was started by another.
func TestEngineSettings(t *testing.T) {
	cfg := chdbtest.Config(t)
	cfg.MaxThreads = 3
	s, err := chdb.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	res, err := s.Query(t.Context(), "SELECT toUInt64(getSetting('max_threads')) AS n", nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.Int(0, "n"); n != 3 {
		t.Fatalf("max_threads = %d, want 3", n)
	}
	if err := chdb.LeanConfig().Validate(); err != nil {
		t.Fatalf("LeanConfig: %v", err)
	}
}

// TestLeanKeepsPlace: Lean changes the engine's tuning only, so a command's lean
// defaults keep where its data is; LeanConfig is the default's Lean.
func TestLeanKeepsPlace(t *testing.T) {
	c := chdb.DefaultConfig()
	c.Path, c.LibPath, c.Database = "/data/x", "/lib/libchdb.so", "other"
	l := c.Lean()
	if l.Path != c.Path || l.LibPath != c.LibPath || l.Database != c.Database || l.ReadOnly != c.ReadOnly {
		t.Errorf("Lean() moved the data: %+v from %+v", l, c)
	}
	if l.Conns != 1 || l.MergeThreads != 1 || l.Arenas != 1 || l.MemoryLimitMiB == 0 || l.ReleaseCodeEvery == 0 {
		t.Errorf("Lean() = %+v, want one connection, one merge, one arena, a memory cap and the code released as it writes", l)
	}
	if chdb.LeanConfig() != chdb.DefaultConfig().Lean() {
		t.Error("LeanConfig() is not DefaultConfig().Lean()")
	}
}

func allTypesBlock() (*store.Block, int) {
	ts := store.NewDateTime64Ms("ts")
	u16 := store.NewUInt16("u16")
	u32 := store.NewUInt32("u32")
	u64 := store.NewUInt64("u64")
	i32 := store.NewInt32("i32")
	f32 := store.NewFloat32("f32")
	nf := store.NewNullableFloat32("nf")
	s := store.NewString("s")
	arr := store.NewStringArray("arr")
	m := store.NewStringMap("m")
	base := time.Date(2026, 12, 1, 8, 0, 0, 250e6, time.UTC).UnixMilli()
	rows := 3
	for i := 0; i < rows; i++ {
		ts.Append(base + int64(i)*1000)
		u16.Append(uint16(i + 1))
		u32.Append(uint32(1<<31 + i))
		u64.Append(uint64(1<<63 + uint64(i)))
		i32.Append(int32(-i))
		f32.Append(float32(i) + 0.5)
		if i == 1 {
			nf.Append(schemas.Missing)
		} else {
			nf.Append(float32(i) / 4)
		}
		s.Append([]string{"", "it's", "ünïcode"}[i])
		arr.Append([]string{"a", "b"}[:i%3])
		m.Append(map[string]string{"team": "ml", "k": []string{"x", "y", "z"}[i]})
	}
	return store.NewBlock(ts, u16, u32, u64, i32, f32, nf, s, arr, m), rows
}

func TestInsertAndQueryTypes(t *testing.T) {
	ctx := t.Context()
	s := chdbtest.Open(t)
	err := s.Exec(ctx, `CREATE TABLE t (ts DateTime64(3, 'UTC'), u16 UInt16, u32 UInt32, u64 UInt64, i32 Int32,
		f32 Float32, nf Nullable(Float32), s LowCardinality(String), arr Array(LowCardinality(String)),
		m Map(LowCardinality(String), String)) ENGINE = MergeTree ORDER BY ts`, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, rows := allTypesBlock()
	if err := s.Insert(ctx, "t", b, ""); err != nil {
		t.Fatal(err)
	}
	res, err := s.Query(ctx, "SELECT * FROM t ORDER BY ts", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != rows {
		t.Fatalf("got %d rows, want %d", len(res.Rows), rows)
	}
	r1 := res.Rows[1]
	want := []any{
		time.Date(2026, 12, 1, 8, 0, 1, 250e6, time.UTC), uint64(2), uint64(1<<31 + 1), uint64(1<<63 + 1),
		int64(-1), 1.5, nil, "it's", []any{"a"}, map[string]any{"team": "ml", "k": "y"},
	}
	for i, w := range want {
		got := r1[i]
		if store.FormatValue(got) != store.FormatValue(w) {
			t.Errorf("column %s: got %#v, want %#v", res.Columns[i].Name, got, w)
		}
	}
	if v, _ := res.Float(2, "nf"); v != 0.5 {
		t.Errorf("nf row 2 = %v, want 0.5", v)
	}
	if v, _ := res.Float(1, "nf"); !math.IsNaN(v) {
		t.Errorf("NULL nf read as %v, want NaN", v)
	}
}

func TestInsertDeduplicationToken(t *testing.T) {
	ctx := t.Context()
	s := chdbtest.Open(t)
	if _, err := store.Migrate(ctx, s, schemas.MigrationParams{RawTTLDays: 30}); err != nil {
		t.Fatal(err)
	}
	mk := func(pid uint32) *store.Block {
		ts := store.NewDateTime64Ms("ts")
		node := store.NewString("node")
		gpu := store.NewString("gpu_uuid")
		p := store.NewUInt32("pid")
		ts.Append(time.Now().UnixMilli())
		node.Append("n1")
		gpu.Append("GPU-1")
		p.Append(pid)
		return store.NewBlock(ts, node, gpu, p)
	}
	for _, step := range []struct {
		token string
		pid   uint32
		want  int64
	}{
		{"batch-1", 1, 1},
		{"batch-1", 1, 1}, // redelivered: dropped
		{"batch-2", 2, 2},
		{"batch-3", 2, 3}, // same rows, new token: a new insert
	} {
		if err := s.Insert(ctx, "process_samples", mk(step.pid), step.token); err != nil {
			t.Fatal(err)
		}
		res, err := s.Query(ctx, "SELECT count() AS n FROM process_samples", nil)
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := res.Int(0, "n"); n != step.want {
			t.Fatalf("after insert with token %q: %d rows, want %d", step.token, n, step.want)
		}
	}
}

func TestQueryParams(t *testing.T) {
	s := chdbtest.Open(t)
	res, err := s.Query(t.Context(), "SELECT {name:String} AS name, {n:UInt32} * 2 AS n", store.Params{"name": "x'); DROP TABLE y; --", "n": "21"})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := res.String(0, "name"); got != "x'); DROP TABLE y; --" {
		t.Errorf("name = %q: parameters must arrive as values", got)
	}
	if got, _ := res.Int(0, "n"); got != 42 {
		t.Errorf("n = %d, want 42", got)
	}
	if _, err := s.Query(t.Context(), "SELECT nosuchcolumn", nil); err == nil || !strings.Contains(err.Error(), "nosuchcolumn") {
		t.Errorf("bad query: err = %v, want the engine's error naming the column", err)
	}
}

func TestMigrateIdempotent(t *testing.T) {
	ctx := t.Context()
	s := chdbtest.Open(t)
	p := schemas.MigrationParams{RawTTLDays: 30}
	first, err := store.Migrate(ctx, s, p)
	if err != nil {
		t.Fatal(err)
	}
	ms, _ := schemas.Migrations(schemas.MigrationParams{DB: s.Database(), RawTTLDays: 30})
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
	// An edited migration is refused.
	if err := s.Exec(ctx, "INSERT INTO schema_migrations VALUES (1, 'samples', 'edited', now64(3))", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Migrate(ctx, s, p); err == nil || !strings.Contains(err.Error(), "edited") {
		t.Fatalf("migrate with a changed checksum: err = %v, want a refusal", err)
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

// TestMigrateUpToDateOnlyReads: on a schema already up to date Migrate runs nothing
// but its read of schema_migrations, so a service whose user may only read that
// table (store/grants) starts.
func TestMigrateUpToDateOnlyReads(t *testing.T) {
	s := chdbtest.Open(t)
	p := schemas.MigrationParams{RawTTLDays: 30}
	if _, err := store.Migrate(t.Context(), s, p); err != nil {
		t.Fatal(err)
	}
	c := &execCounter{Store: s}
	rep, err := store.Migrate(t.Context(), c, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.execs) != 0 || len(rep.Applied) != 0 || len(rep.Skipped) == 0 {
		t.Fatalf("second Migrate ran %q, applied %v, skipped %v: want no statement and everything skipped", c.execs, rep.Applied, rep.Skipped)
	}
}

// TestMigrateAddsActor upgrades a database made before 0006: the actions rows
// written then read back with an empty actor, and new rows keep theirs.
func TestMigrateAddsActor(t *testing.T) {
	ctx := t.Context()
	s := chdbtest.Open(t)
	ms, err := schemas.Migrations(schemas.MigrationParams{DB: s.Database(), RawTTLDays: 30})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.Version >= 6 {
			break
		}
		for _, q := range m.Statements {
			if err := s.Exec(ctx, q, nil); err != nil {
				t.Fatalf("migration %d: %v", m.Version, err)
			}
		}
	}
	if err := s.Exec(ctx, "INSERT INTO actions (ts, id, decision, outcome) VALUES (now64(3), 'old', 'admit', 'ok')", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Migrate(ctx, s, schemas.MigrationParams{RawTTLDays: 30}); err != nil {
		t.Fatal(err)
	}
	if err := s.Exec(ctx, "INSERT INTO actions (ts, id, decision, outcome, actor) VALUES (now64(3), 'new', 'submit', 'ok', 'token:alice')", nil); err != nil {
		t.Fatal(err)
	}
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

func TestDataSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	cfg := chdbtest.Config(t)
	s, err := chdb.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Exec(ctx, "CREATE TABLE kept (x UInt32) ENGINE = MergeTree ORDER BY x", nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Exec(ctx, "INSERT INTO kept VALUES (7)", nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Exec(ctx, "SELECT 1", nil); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Exec after Close: err = %v, want ErrClosed", err)
	}
	s2, err := chdb.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = s2.Exec(ctx, "DROP DATABASE "+cfg.Database, nil)
		_ = s2.Close()
	}()
	res, err := s2.Query(ctx, "SELECT sum(x) AS x FROM kept", nil)
	if err != nil {
		t.Fatal(err)
	}
	if x, _ := res.Int(0, "x"); x != 7 {
		t.Fatalf("after reopen sum(x) = %d, want 7", x)
	}
}

func TestReadOnly(t *testing.T) {
	ctx := t.Context()
	s := chdbtest.Open(t)
	if err := s.Exec(ctx, "CREATE TABLE r (x UInt32) ENGINE = MergeTree ORDER BY x", nil); err != nil {
		t.Fatal(err)
	}
	cfg := chdbtest.Config(t)
	cfg.Database = s.Database()
	cfg.ReadOnly = true
	ro, err := chdb.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if err := ro.Exec(ctx, "INSERT INTO r VALUES (1)", nil); err == nil {
		t.Fatal("insert through a read-only store succeeded")
	}
	if _, err := ro.Query(ctx, "SELECT count() FROM r", nil); err != nil {
		t.Fatalf("read through a read-only store: %v", err)
	}
}

func TestOtherPathAfterEveryStoreClosed(t *testing.T) {
	ctx := context.Background()
	// Close the shared-path stores other tests may hold open: none are open
	// between tests, since each closes its own in Cleanup.
	a := chdbtest.Config(t)
	a.Path = t.TempDir()
	s, err := chdb.Open(a)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Exec(ctx, "CREATE TABLE only_in_a (x UInt8) ENGINE = MergeTree ORDER BY x", nil); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	b := a
	b.Path = t.TempDir()
	s2, err := chdb.Open(b)
	if err != nil {
		t.Fatalf("open another path once the first is closed: %v", err)
	}
	defer s2.Close()
	res, err := s2.Query(ctx, "SELECT count() AS n FROM system.tables WHERE database = currentDatabase() AND name = 'only_in_a'", nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.Int(0, "n"); n != 0 {
		t.Fatal("the second path sees the first path's table")
	}
}

func TestLowCardinalityNative(t *testing.T) {
	ctx := t.Context()
	s := chdbtest.Open(t)
	if err := s.Exec(ctx, "CREATE TABLE lc (i UInt32, s LowCardinality(String)) ENGINE = MergeTree ORDER BY i", nil); err != nil {
		t.Fatal(err)
	}
	// One column for all, reset between: its index width grows from a byte a row
	// to four and stays there for the small dictionaries at the end.
	lc := store.NewLowCardinalityString("s")
	for _, distinct := range []int{1, 3, 256, 257, 300, 65536, 70000, 1, 300} {
		i := store.NewUInt32("i")
		lc.Reset()
		for r := 0; r < 100000; r++ {
			i.Append(uint32(r))
			lc.Append([]string{"", "a", "ünï"}[r%3] + strconv.Itoa(r%distinct))
		}
		if err := s.Exec(ctx, "TRUNCATE TABLE lc", nil); err != nil {
			t.Fatal(err)
		}
		if err := s.Insert(ctx, "lc", store.NewBlock(i, lc), ""); err != nil {
			t.Fatalf("%d distinct values: %v", distinct, err)
		}
		res, err := s.Query(ctx, "SELECT count() AS n, uniqExact(s) AS u, countIf(s = concat(['', 'a', 'ünï'][i % 3 + 1], toString(i % {d:UInt32}))) AS ok FROM lc", store.Params{"d": strconv.Itoa(distinct)})
		if err != nil {
			t.Fatal(err)
		}
		n, _ := res.Int(0, "n")
		ok, _ := res.Int(0, "ok")
		if n != 100000 || ok != n {
			t.Fatalf("%d distinct values: %d rows, %d read back right", distinct, n, ok)
		}
	}
}
