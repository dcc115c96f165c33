package clickhouse

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

func TestMain(m *testing.M) { chdbtest.Main(m) }

// The tests in this file need a ClickHouse server. By default they run against a
// chDB endpoint (clickhouse-local serving the native protocol, started once per
// test binary by chdbtest.SharedEndpoint); GPUPOOL_TEST_CLICKHOUSE names a real
// server instead (24 or later): its native address ("localhost:9000") or a DSN
// ("clickhouse://user:pass@host:9000?cluster=c"). Each test works in a database of
// its own, dropped when it ends. They mirror store/chdb's tests, so both backends
// are held to the same behaviour.

const serverEnv = "GPUPOOL_TEST_CLICKHOUSE"

// serverConfig returns the configuration of the test server with a new, unique
// database, or skips the test when no server is named.
func serverConfig(t *testing.T) Config {
	t.Helper()
	target := os.Getenv(serverEnv)
	if target == "" {
		if os.Getenv(chdbtest.NoEndpointEnv) == "1" {
			t.Skip(chdbtest.NoEndpointEnv + "=1 and GPUPOOL_TEST_CLICKHOUSE not set: no ClickHouse server to test against")
		}
		ep, err := chdbtest.SharedEndpoint()
		if err != nil {
			t.Fatalf("no ClickHouse server to test against: %v (run \"make deps\" for libchdb.so, set GPUPOOL_TEST_CLICKHOUSE to a server's host:port, or %s=1 to skip)", err, chdbtest.NoEndpointEnv)
		}
		target = ep.TCPAddr
	}
	cfg := DefaultConfig()
	if strings.Contains(target, "://") {
		var err error
		if cfg, err = ParseDSN(target); err != nil {
			t.Fatalf("%s: %v", serverEnv, err)
		}
	} else {
		cfg.Addr = strings.Split(target, ",")
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	cfg.Database = "gpupool_test_" + hex.EncodeToString(b[:])
	return cfg
}

// openServer opens a store on a new database and drops it when the test ends.
func openServer(t *testing.T) *Store {
	t.Helper()
	return openServerConfig(t, serverConfig(t))
}

func openServerConfig(t *testing.T, cfg Config) *Store {
	t.Helper()
	s, err := Open(t.Context(), cfg)
	if err != nil {
		t.Fatalf("open %s: %v", strings.Join(cfg.Addr, ","), err)
	}
	t.Cleanup(func() {
		// t.Context is done by now.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		p := schemas.MigrationParams{Cluster: cfg.Cluster}
		if s.closed.Load() {
			if s2, err := Open(ctx, cfg); err == nil {
				s = s2
			}
		}
		if err := s.Exec(ctx, "DROP DATABASE IF EXISTS "+schemas.QuoteIdent(cfg.Database)+" "+p.OnCluster()+" SYNC", nil); err != nil {
			t.Logf("drop test database %s: %v", cfg.Database, err)
		}
		_ = s.Close()
	})
	return s
}

func count(t *testing.T, s *Store, table string) int64 {
	t.Helper()
	res, err := s.Query(t.Context(), "SELECT count() AS n FROM "+schemas.QuoteIdent(table), nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := res.Int(0, "n")
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestServerInsertAndQueryTypes(t *testing.T) {
	ctx := t.Context()
	s := openServer(t)
	err := s.Exec(ctx, `CREATE TABLE t (ts DateTime64(3, 'UTC'), u16 UInt16, u32 UInt32, u64 UInt64, i32 Int32,
		f32 Float32, nf Nullable(Float32), s LowCardinality(String), arr Array(LowCardinality(String)),
		m Map(LowCardinality(String), String)) ENGINE = MergeTree ORDER BY ts`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Insert(ctx, "t", allTypesBlock(), ""); err != nil {
		t.Fatal(err)
	}
	res, err := s.Query(ctx, "SELECT * FROM t ORDER BY ts", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 3 {
		t.Fatalf("got %d rows, want 3", len(res.Rows))
	}
	want := []any{
		time.Date(2026, 12, 1, 8, 0, 1, 250e6, time.UTC), uint64(2), uint64(1<<31 + 1), uint64(1<<63 + 1),
		int64(-1), 1.5, nil, "it's", []any{"a"}, map[string]any{"team": "ml", "k": "y"},
	}
	for i, w := range want {
		if got := res.Rows[1][i]; !reflect.DeepEqual(got, w) {
			t.Errorf("column %s: got %#v, want %#v", res.Columns[i].Name, got, w)
		}
	}
	if res.Columns[6].Name != "nf" || res.Columns[6].Type != "Nullable(Float32)" {
		t.Errorf("column 6 is %+v, want nf Nullable(Float32)", res.Columns[6])
	}
	if v, _ := res.Float(2, "nf"); v != 0.5 {
		t.Errorf("nf row 2 = %v, want 0.5", v)
	}
	if v, _ := res.Float(1, "nf"); !math.IsNaN(v) {
		t.Errorf("NULL nf read as %v, want NaN", v)
	}
	if got, _ := res.String(2, "s"); got != "ünïcode" {
		t.Errorf("s row 2 = %q", got)
	}
}

func TestServerInsertDeduplicationToken(t *testing.T) {
	ctx := t.Context()
	s := openServer(t)
	if _, err := store.Migrate(ctx, s, schemas.MigrationParams{Cluster: s.Cluster(), RawTTLDays: 30}); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	mk := func(pid uint32) *store.Block {
		ts := store.NewDateTime64Ms("ts")
		node := store.NewString("node")
		gpu := store.NewString("gpu_uuid")
		p := store.NewUInt32("pid")
		ts.Append(now + int64(pid))
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
		if n := count(t, s, "process_samples"); n != step.want {
			t.Fatalf("after insert with token %q: %d rows, want %d", step.token, n, step.want)
		}
	}
}

// TestServerInsertSameMapTwice inserts one block of job events twice without a
// token: the table's data-hash deduplication drops the second only if the bytes
// are equal, which needs map keys sent in a fixed order.
func TestServerInsertSameMapTwice(t *testing.T) {
	ctx := t.Context()
	s := openServer(t)
	if _, err := store.Migrate(ctx, s, schemas.MigrationParams{Cluster: s.Cluster(), RawTTLDays: 30}); err != nil {
		t.Fatal(err)
	}
	ts, job, event, labels := store.NewDateTime64Ms("ts"), store.NewString("job"), store.NewString("event"), store.NewStringMap("labels")
	ts.Append(time.Now().UnixMilli())
	job.Append("j1")
	event.Append("submit")
	m := map[string]string{}
	for _, k := range strings.Fields("a b c d e f g h i j k l m n o p") {
		m[k] = k
	}
	labels.Append(m)
	b := store.NewBlock(ts, job, event, labels)
	for range 2 {
		if err := s.Insert(ctx, "job_events", b, ""); err != nil {
			t.Fatal(err)
		}
	}
	if n := count(t, s, "job_events"); n != 1 {
		t.Fatalf("%d rows after inserting the same block twice, want 1 (deduplicated)", n)
	}
}

func TestServerAsyncInsert(t *testing.T) {
	ctx := t.Context()
	cfg := serverConfig(t)
	cfg.AsyncInsert = true
	s := openServerConfig(t, cfg)
	if err := s.Exec(ctx, "CREATE TABLE a (x UInt32, s String) ENGINE = MergeTree ORDER BY x", nil); err != nil {
		t.Fatal(err)
	}
	x, str := store.NewUInt32("x"), store.NewString("s")
	x.Append(1, 2, 3)
	str.Append("a", "b", "c")
	if err := s.Insert(ctx, "a", store.NewBlock(x, str), ""); err != nil {
		t.Fatal(err)
	}
	// wait_for_async_insert=1: the rows are written when Insert returns.
	if n := count(t, s, "a"); n != 3 {
		t.Fatalf("%d rows after an async insert, want 3", n)
	}
}

func TestServerQueryParams(t *testing.T) {
	s := openServer(t)
	ctx := t.Context()
	res, err := s.Query(ctx, "SELECT {name:String} AS name, {n:UInt32} * 2 AS n, {t:DateTime64(3)} AS t",
		store.Params{"name": "x'); DROP TABLE y; --", "n": "21", "t": "2026-01-02 03:04:05.678"})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := res.String(0, "name"); got != "x'); DROP TABLE y; --" {
		t.Errorf("name = %q: parameters must arrive as values", got)
	}
	if got, _ := res.Int(0, "n"); got != 42 {
		t.Errorf("n = %d, want 42", got)
	}
	// session_timezone=UTC: a time parameter without a zone is UTC, as in the
	// embedded store, whatever the server's own time zone.
	if got := res.Rows[0][2]; got != time.Date(2026, 1, 2, 3, 4, 5, 678e6, time.UTC) {
		t.Errorf("t = %v, want 2026-01-02 03:04:05.678 UTC", got)
	}
	if _, err := s.Query(ctx, "SELECT nosuchcolumn", nil); err == nil || !strings.Contains(err.Error(), "nosuchcolumn") {
		t.Errorf("bad query: err = %v, want the server's error naming the column", err)
	}
	if err := s.Exec(ctx, "CREATE TABLE p (x String) ENGINE = MergeTree ORDER BY x", nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Exec(ctx, "INSERT INTO p VALUES ({x:String})", store.Params{"x": "it's"}); err != nil {
		t.Fatalf("INSERT ... VALUES with a parameter (as store.Migrate does): %v", err)
	}
	res, err = s.Query(ctx, "SELECT x FROM p WHERE x = {x:String}", store.Params{"x": "it's"})
	if err != nil || len(res.Rows) != 1 {
		t.Fatalf("read back the parameter: %v rows, err %v", res, err)
	}
}

// TestServerResultKinds checks the values of server-computed columns have the
// kinds the embedded store returns for them.
func TestServerResultKinds(t *testing.T) {
	s := openServer(t)
	res, err := s.Query(t.Context(), `SELECT toInt8(-8) AS i8, toUInt8(8) AS u8, toUInt64(18446744073709551615) AS u64,
		toFloat32(0.1) AS f32, toDecimal64(1.25, 2) AS dec, true AS b, toFixedString('ab', 2) AS fs,
		toLowCardinality('x') AS lc, CAST('b', 'Enum8(\'a\' = 1, \'b\' = 2)') AS e,
		toUUID('6ba7b810-9dad-11d1-80b4-00c04fd430c8') AS id, toIPv4('10.1.2.3') AS ip4, toIPv6('2001:db8::1') AS ip6,
		toDate('2026-03-04') AS d, toDateTime('2026-03-04 05:06:07', 'Asia/Tokyo') AS dt_tokyo,
		toDateTime64('2026-03-04 05:06:07.250', 3, 'UTC') AS dt64, NULL AS n, CAST(NULL, 'Nullable(Float64)') AS nf,
		[1, 2] AS arr, [['a'], []] AS arr2, map('k', 1) AS m, tuple(1, 'a') AS tup, toInt128(-5) AS i128,
		nan AS fnan`, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"i8": int64(-8), "u8": uint64(8), "u64": uint64(math.MaxUint64), "f32": 0.1, "dec": 1.25, "b": true,
		"fs": "ab", "lc": "x", "e": "b", "id": "6ba7b810-9dad-11d1-80b4-00c04fd430c8", "ip4": "10.1.2.3",
		"ip6": "2001:db8::1", "d": time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC),
		"dt_tokyo": time.Date(2026, 3, 3, 20, 6, 7, 0, time.UTC),
		"dt64":     time.Date(2026, 3, 4, 5, 6, 7, 250e6, time.UTC), "n": nil, "nf": nil,
		"arr": []any{uint64(1), uint64(2)}, "arr2": []any{[]any{"a"}, []any{}}, "m": map[string]any{"k": uint64(1)},
		"tup": []any{uint64(1), "a"}, "i128": "-5",
	}
	if len(res.Rows) != 1 {
		t.Fatalf("got %d rows, want 1", len(res.Rows))
	}
	for name, w := range want {
		i := res.Index(name)
		if i < 0 {
			t.Errorf("no column %s", name)
			continue
		}
		if got := res.Rows[0][i]; !reflect.DeepEqual(got, w) {
			t.Errorf("%s (%s) = %#v (%T), want %#v (%T)", name, res.Columns[i].Type, got, got, w, w)
		}
	}
	if v, err := res.Float(0, "fnan"); err != nil || !math.IsNaN(v) {
		t.Errorf("fnan = %v, %v; want NaN", v, err)
	}
}

func TestServerMigrateIdempotent(t *testing.T) {
	ctx := t.Context()
	s := openServer(t)
	p := schemas.MigrationParams{Cluster: s.Cluster(), RawTTLDays: 30}
	first, err := store.Migrate(ctx, s, p)
	if err != nil {
		t.Fatal(err)
	}
	ms, _ := schemas.Migrations(schemas.MigrationParams{DB: s.Database(), Cluster: s.Cluster(), RawTTLDays: 30})
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
	// An edited migration is refused.
	if err := s.Exec(ctx, "INSERT INTO schema_migrations VALUES (1, 'samples', 'edited', now64(3))", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Migrate(ctx, s, p); err == nil || !strings.Contains(err.Error(), "edited") {
		t.Fatalf("migrate with a changed checksum: err = %v, want a refusal", err)
	}
}

func TestServerDataSurvivesReopen(t *testing.T) {
	ctx := t.Context()
	cfg := serverConfig(t)
	s := openServerConfig(t, cfg)
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
	s2, err := Open(ctx, cfg) // the database exists now: Open must not mind
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	res, err := s2.Query(ctx, "SELECT sum(x) AS x FROM kept", nil)
	if err != nil {
		t.Fatal(err)
	}
	if x, _ := res.Int(0, "x"); x != 7 {
		t.Fatalf("after reopen sum(x) = %d, want 7", x)
	}
}

func TestServerInsertTypeMismatch(t *testing.T) {
	ctx := t.Context()
	s := openServer(t)
	if err := s.Exec(ctx, "CREATE TABLE w (a UInt64, b Float64, c UInt16) ENGINE = MergeTree ORDER BY a", nil); err != nil {
		t.Fatal(err)
	}
	a, b, c := store.NewUInt32("a"), store.NewFloat32("b"), store.NewUInt16("c")
	a.Append(math.MaxUint32)
	b.Append(0.5)
	c.Append(9)
	if err := s.Insert(ctx, "w", store.NewBlock(a, b, c), ""); err != nil {
		t.Fatalf("widening insert: %v", err)
	}
	res, err := s.Query(ctx, "SELECT a, b FROM w", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.Rows[0], []any{uint64(math.MaxUint32), 0.5}) {
		t.Errorf("row = %#v", res.Rows[0])
	}
	// Narrowing is refused with the column and both types named.
	wide := store.NewUInt32("c")
	wide.Append(1)
	err = s.Insert(ctx, "w", store.NewBlock(wide), "")
	if err == nil || !strings.Contains(err.Error(), "column c (UInt32 into UInt16)") {
		t.Fatalf("narrowing insert: err = %v, want one naming column c and both types", err)
	}
	if n := count(t, s, "w"); n != 1 {
		t.Errorf("%d rows after a refused insert, want 1", n)
	}
}
