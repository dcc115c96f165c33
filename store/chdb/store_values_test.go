package chdb_test

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

// rowBinaryCases are expressions of every type the binary reader reads, with
// the values at their edges; each is asked in both output formats.
var rowBinaryCases = []string{
	"toUInt8(255), toUInt16(65535), toUInt32(4294967295), toUInt64(18446744073709551615)",
	"toInt8(-128), toInt16(-32768), toInt32(-2147483648), toInt64(-9223372036854775808), toInt64(9223372036854775807)",
	"toInt128('-170141183460469231731687303715884105728'), toUInt128('340282366920938463463374607431768211455'), toInt256(-1), toUInt256('12345678901234567890123456789')",
	"toFloat32(0.1), toFloat32(-3.4028235e38), toFloat32(1e-45), toFloat32(nan), toFloat32(inf), toFloat32(-inf)",
	"0.1 + 0.2, -0., toFloat64(nan), toFloat64(-inf), 1e308, 5e-324, 123456789.125",
	"true, false, CAST(NULL, 'Nullable(Bool)')",
	"'', 'plain', 'квт·ч 🚀', 'quote\"back\\\\slash\nnew', repeat('x', 300)",
	"toFixedString('ab', 5), toFixedString('', 1)",
	"toDate('1970-01-01'), toDate('2149-06-06'), toDate32('1900-01-01'), toDate32('2299-12-31')",
	"toDateTime('2026-12-07 19:28:38', 'UTC'), toDateTime('2026-03-29 02:30:00', 'Europe/Berlin'), toDateTime(0, 'Asia/Tokyo')",
	"toDateTime64('2026-12-07 19:28:38.123', 3, 'UTC'), toDateTime64('1969-12-31 23:59:59.999999', 6, 'UTC'), toDateTime64('1900-01-01 00:00:00.000000001', 9, 'UTC'), toDateTime64('2026-12-07 10:00:00', 0, 'America/New_York')",
	"toDecimal32(-1.5, 3), toDecimal64(0.1, 6), toDecimal64(123456789012.345678, 6), toDecimal128('-0.000000000000000000000000000001', 30), toDecimal256('1234567890123456789012345678901234567890.5', 10)",
	"CAST(1.000001, 'Decimal(18, 6)'), CAST(-99999999.999999, 'Decimal(18, 6)'), CAST('0.3', 'Decimal(9, 9)'), CAST(9007199254740993, 'Decimal(18, 0)')",
	"CAST('b', 'Enum8(\\'a\\' = -1, \\'b\\' = 2)'), CAST('it\\'s, (odd)', 'Enum16(\\'it\\\\\\'s, (odd)\\' = 1000, \\'x\\' = 1)')",
	"toUUID('61f0c404-5cb3-11e7-907b-a6006ad3dba0'), toUUID('00000000-0000-0000-0000-000000000000'), toIPv4('1.2.3.4'), toIPv4('255.0.0.1')",
	"CAST(NULL, 'Nullable(Int32)'), toNullable(3), NULL, [NULL, 1, NULL], toLowCardinality(toNullable('x')), CAST(NULL, 'LowCardinality(Nullable(String))')",
	"[], [[1, 2], [], [3]], ['a', ''], [toFloat32(0.5), NULL], [toDateTime('2026-01-01 00:00:00', 'UTC')]",
	"tuple(1, 'x', NULL), tuple(tuple(1.5, [1])), [tuple(1, 'a'), tuple(2, 'b')]",
	"map('a', 1, 'b', 2), map(1, 'x', 300, 'y'), map(-5, [1.5]), CAST(map(), 'Map(String, UInt8)')",
	"toLowCardinality('gpu-0'), [toLowCardinality('a'), toLowCardinality('a')]",
}

// TestRowBinaryAsJSON: every value the binary reader reads is the value the
// JSONCompact reader gives for the same query.
func TestRowBinaryAsJSON(t *testing.T) {
	s := chdbtest.Open(t)
	for _, exprs := range rowBinaryCases {
		sql := "SELECT " + exprs
		bin, js := bothForms(t, s, sql)
		if len(bin.Rows) != 1 || len(js.Rows) != 1 {
			t.Fatalf("%s: %d and %d rows, want 1", sql, len(bin.Rows), len(js.Rows))
		}
		if !reflect.DeepEqual(bin.Columns, js.Columns) {
			t.Errorf("%s: columns %v, JSON %v", sql, bin.Columns, js.Columns)
		}
		for i := range js.Rows[0] {
			if !sameValue(bin.Rows[0][i], js.Rows[0][i]) {
				t.Errorf("%s: column %s (%s): binary %#v, JSON %#v", sql, js.Columns[i].Name, js.Columns[i].Type, bin.Rows[0][i], js.Rows[0][i])
			}
		}
	}
}

// TestRowBinaryManyRows: rows past the reader's chunk of cells, with
// LowCardinality strings repeating, read as the JSON form reads them.
func TestRowBinaryManyRows(t *testing.T) {
	s := chdbtest.Open(t)
	sql := `SELECT toLowCardinality('gpu-' || toString(number % 16)) AS gpu,
		toDateTime('2026-01-01 00:00:00', 'UTC') + number * 60 AS minute,
		if(number % 7 = 0, NULL, number / 7) AS sm, toUInt32(number) AS fb
		FROM numbers(2000)`
	bin, js := bothForms(t, s, sql)
	if len(bin.Rows) != 2000 || len(js.Rows) != 2000 {
		t.Fatalf("%d and %d rows, want 2000", len(bin.Rows), len(js.Rows))
	}
	for r := range js.Rows {
		for i := range js.Rows[r] {
			if !sameValue(bin.Rows[r][i], js.Rows[r][i]) {
				t.Fatalf("row %d column %s: binary %#v, JSON %#v", r, js.Columns[i].Name, bin.Rows[r][i], js.Rows[r][i])
			}
		}
	}
	// A row's cells are its own: appending to one does not write into the next.
	_ = append(bin.Rows[0], "extra")
	if bin.Rows[1][0] != "gpu-1" {
		t.Errorf("row 1 changed by appending to row 0: %v", bin.Rows[1])
	}
}

// TestRowBinaryOwnChoices: where the two forms differ on purpose.
func TestRowBinaryOwnChoices(t *testing.T) {
	s := chdbtest.Open(t)
	// A SimpleAggregateFunction column holds its type's values (JSON: text).
	res, err := s.Query(t.Context(), "SELECT CAST(7, 'SimpleAggregateFunction(sum, UInt64)') AS n, CAST(1.5, 'SimpleAggregateFunction(max, Float64)') AS f", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows[0][0] != uint64(7) || res.Rows[0][1] != 1.5 {
		t.Errorf("SimpleAggregateFunction values %#v, want uint64 7 and 1.5", res.Rows[0])
	}
	// A DateTime in a zone's repeated hour is the instant stored (its text,
	// 02:30 on the day clocks go back, is two instants).
	res, err = s.Query(t.Context(), "SELECT toDateTime('2026-10-25 02:30:00', 'Europe/Berlin') AS t, toUnixTimestamp(t) AS u", nil)
	if err != nil {
		t.Fatal(err)
	}
	if at, _ := res.Rows[0][0].(time.Time); at.Unix() != int64(res.Rows[0][1].(uint64)) {
		t.Errorf("DateTime in the repeated hour = %v, want the instant %v", at, res.Rows[0][1])
	}
	// Bytes that are not UTF-8 come back as stored (JSON: replaced).
	res, err = s.Query(t.Context(), "SELECT unhex('ff00fe41') AS b", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows[0][0] != "\xff\x00\xfeA" {
		t.Errorf("bytes %q, want ff 00 fe 41", res.Rows[0][0])
	}
}

// TestRowBinaryFallsBackToText: a result with a column the binary reader does
// not read (named tuples, IPv6, intervals, JSON, aggregate states) is asked for
// again as text, and comes back as the JSON reader gives it.
func TestRowBinaryFallsBackToText(t *testing.T) {
	s := chdbtest.Open(t)
	for _, sql := range []string{
		"SELECT CAST((1, 'x'), 'Tuple(a UInt8, b String)') AS t, 1 AS n",
		"SELECT toIPv6('2001:db8::1') AS ip",
		"SELECT INTERVAL 5 SECOND AS iv",
		"SELECT map(toDate('2026-01-01'), 1) AS m",
		"SELECT sumState(number) AS st FROM numbers(3)",
		"SELECT '{\"a\": 1}'::JSON AS j",
	} {
		data, err := chdb.QueryOutput(s, sql, store.RowBinaryFormat)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		if _, err := store.ParseRowBinary(data); !errors.Is(err, store.ErrUnsupportedType) {
			t.Errorf("%s: ParseRowBinary err = %v, want ErrUnsupportedType", sql, err)
		}
		got, err := s.Query(t.Context(), sql, nil)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		_, js := bothForms(t, s, sql)
		if fmt.Sprint(got.Rows) != fmt.Sprint(js.Rows) {
			t.Errorf("%s: Query %v, JSON %v", sql, got.Rows, js.Rows)
		}
	}
}

// TestRowBinaryNoOutput: a statement that returns nothing is an empty result.
func TestRowBinaryNoOutput(t *testing.T) {
	s := chdbtest.Open(t)
	res, err := s.Query(t.Context(), "CREATE TABLE IF NOT EXISTS no_output (k UInt8) ENGINE = Memory", nil)
	if err != nil || len(res.Rows) != 0 {
		t.Fatalf("Query(CREATE) = %v, %v; want no rows", res, err)
	}
	res, err = s.Query(t.Context(), "SELECT k FROM no_output", nil)
	if err != nil || len(res.Rows) != 0 || len(res.Columns) != 1 {
		t.Fatalf("Query(empty table) = %+v, %v; want column k, no rows", res, err)
	}
}

func bothForms(t *testing.T, s *chdb.Store, sql string) (bin, js *store.Result) {
	t.Helper()
	b, err := chdb.QueryOutput(s, sql, store.RowBinaryFormat)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	j, err := chdb.QueryOutput(s, sql, "JSONCompact")
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	if js, err = store.ParseJSONCompact(j); err != nil {
		t.Fatalf("%s: JSON: %v", sql, err)
	}
	if bin, err = store.ParseRowBinary(b); err != nil {
		if errors.Is(err, store.ErrUnsupportedType) {
			return js, js
		}
		t.Fatalf("%s: RowBinary: %v", sql, err)
	}
	return bin, js
}

// sameValue: equal, NaN equal to NaN, times equal as instants in UTC.
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && (x == y && math.Signbit(x) == math.Signbit(y) || math.IsNaN(x) && math.IsNaN(y))
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Equal(y) && x.Location() == time.UTC && y.Location() == time.UTC
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameValue(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if !sameValue(v, y[k]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

// BenchmarkQueryOutput asks the same query (a job timeline's shape: 1,920 rows)
// with its output read as JSONCompact, as Query did before, and as Query reads
// it now, in RowBinary: the ratio is what every query saves.
func BenchmarkQueryOutput(b *testing.B) {
	s := chdbtest.Open(b)
	sql := `SELECT toLowCardinality('GPU-' || toString(number % 16)) AS gpu_uuid,
		toDateTime('2026-12-07 00:00:00', 'UTC') + intDiv(number, 16) * 60 AS minute,
		if(number % 7 = 0, NULL, number / 7) AS sm, toUInt32(number * 3) AS fb
		FROM numbers(1920)`
	b.Run("JSONCompact", func(b *testing.B) {
		for b.Loop() {
			data, err := chdb.QueryOutput(s, sql, "JSONCompact")
			if err != nil {
				b.Fatal(err)
			}
			if _, err := store.ParseJSONCompact(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("RowBinary", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Query(b.Context(), sql, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
