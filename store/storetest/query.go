package storetest

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/store"
)

func testQueryParams(t *testing.T, b Backend) {
	s := b.Open(t)
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
	// A time parameter without a zone is UTC (on a server: session_timezone=UTC),
	// whatever the server's own time zone.
	if got := res.Rows[0][2]; got != time.Date(2026, 1, 2, 3, 4, 5, 678e6, time.UTC) {
		t.Errorf("t = %v, want 2026-01-02 03:04:05.678 UTC", got)
	}
	if _, err := s.Query(ctx, "SELECT nosuchcolumn", nil); err == nil || !strings.Contains(err.Error(), "nosuchcolumn") {
		t.Errorf("bad query: err = %v, want the engine's error naming the column", err)
	}
	exec(t, s, "CREATE TABLE p (x String) ENGINE = MergeTree ORDER BY x")
	if err := s.Exec(ctx, "INSERT INTO p VALUES ({x:String})", store.Params{"x": "it's"}); err != nil {
		t.Fatalf("INSERT ... VALUES with a parameter (as store.Migrate does): %v", err)
	}
	res, err = s.Query(ctx, "SELECT x FROM p WHERE x = {x:String}", store.Params{"x": "it's"})
	if err != nil || len(res.Rows) != 1 {
		t.Fatalf("read back the parameter: %v rows, err %v", res, err)
	}
}

// resultKindsQuery computes a column of each kind of value a query returns.
const resultKindsQuery = `SELECT toInt8(-8) AS i8, toUInt8(8) AS u8, toUInt64(18446744073709551615) AS u64,
	toFloat32(0.1) AS f32, toDecimal64(1.25, 2) AS dec, true AS b, toFixedString('ab', 2) AS fs,
	toLowCardinality('x') AS lc, CAST('b', 'Enum8(\'a\' = 1, \'b\' = 2)') AS e,
	toUUID('6ba7b810-9dad-11d1-80b4-00c04fd430c8') AS id, toIPv4('10.1.2.3') AS ip4, toIPv6('2001:db8::1') AS ip6,
	toDate('2026-03-04') AS d, toDateTime('2026-03-04 05:06:07', 'Asia/Tokyo') AS dt_tokyo,
	toDateTime64('2026-03-04 05:06:07.250', 3, 'UTC') AS dt64, NULL AS n, CAST(NULL, 'Nullable(Float64)') AS nf,
	[1, 2] AS arr, [['a'], []] AS arr2, map('k', 1) AS m, tuple(1, 'a') AS tup, toInt128(-5) AS i128,
	nan AS fnan`

// testResultKinds checks that the values of engine-computed columns have the same
// Go kinds on every backend.
func testResultKinds(t *testing.T, b Backend) {
	s := b.Open(t)
	res, err := s.Query(t.Context(), resultKindsQuery, nil)
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
