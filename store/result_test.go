package store

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

const jsonCompactSample = `{
	"meta": [
		{"name": "team", "type": "LowCardinality(String)"},
		{"name": "n", "type": "UInt64"},
		{"name": "delta", "type": "Int32"},
		{"name": "ratio", "type": "Nullable(Float32)"},
		{"name": "ts", "type": "DateTime64(3, 'UTC')"},
		{"name": "uuids", "type": "Array(String)"},
		{"name": "labels", "type": "Map(LowCardinality(String), String)"},
		{"name": "ok", "type": "Bool"},
		{"name": "pair", "type": "Tuple(UInt8, String)"}
	],
	"data": [
		["nlp", 18446744073709551615, -3, 0.25, "2026-12-01 08:00:00.250", ["a","b"], {"k":"v"}, true, [1, "x"]],
		["cv", 0, 0, null, "2026-12-01 00:00:00.000", [], {}, false, [2, "y"]],
		["x", 1, 1, "nan", "2026-12-01 00:00:00", [], {}, false, [3, "z"]]
	],
	"rows": 3
}`

func TestParseJSONCompact(t *testing.T) {
	res, err := ParseJSONCompact([]byte(jsonCompactSample))
	if err != nil {
		t.Fatal(err)
	}
	r := res.Rows[0]
	if r[0] != "nlp" || r[1] != uint64(math.MaxUint64) || r[2] != int64(-3) || r[3] != 0.25 || r[7] != true {
		t.Errorf("row 0 = %#v", r)
	}
	if ts := r[4].(time.Time); !ts.Equal(time.Date(2026, 12, 1, 8, 0, 0, 250e6, time.UTC)) {
		t.Errorf("ts = %v", ts)
	}
	if arr := r[5].([]any); len(arr) != 2 || arr[1] != "b" {
		t.Errorf("uuids = %#v", r[5])
	}
	if m := r[6].(map[string]any); m["k"] != "v" {
		t.Errorf("labels = %#v", r[6])
	}
	if tup := r[8].([]any); tup[0] != uint64(1) || tup[1] != "x" {
		t.Errorf("pair = %#v", r[8])
	}
	if res.Rows[1][3] != nil {
		t.Errorf("NULL ratio = %#v", res.Rows[1][3])
	}
	if v, _ := res.Float(2, "ratio"); !math.IsNaN(v) {
		t.Errorf("nan ratio = %v", v)
	}
	if _, err := res.Float(0, "nope"); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("missing column: %v", err)
	}
	if n, _ := res.Int(1, "n"); n != 0 {
		t.Errorf("Int = %d", n)
	}
	if _, err := res.Int(0, "n"); err == nil {
		t.Error("uint64 max did not report overflow")
	}
}

func TestParseJSONCompactErrors(t *testing.T) {
	for name, in := range map[string]string{
		"not json":     "{",
		"row length":   `{"meta":[{"name":"a","type":"UInt8"}],"data":[[1,2]]}`,
		"bad int":      `{"meta":[{"name":"a","type":"Int8"}],"data":[["x"]]}`,
		"bad time":     `{"meta":[{"name":"a","type":"DateTime"}],"data":[["yesterday"]]}`,
		"array as int": `{"meta":[{"name":"a","type":"Array(UInt8)"}],"data":[[1]]}`,
		"bad zone":     `{"meta":[{"name":"a","type":"DateTime('No/Such_Zone')"}],"data":[["2026-03-04 05:06:07"]]}`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := ParseJSONCompact([]byte(in)); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	if res, err := ParseJSONCompact(nil); err != nil || len(res.Rows) != 0 {
		t.Fatalf("empty output: %v %v", res, err)
	}
}

// TestParseJSONCompactTimeZones: ClickHouse writes a DateTime in the wall clock of
// the zone its type names; the Result holds the instant, in UTC.
func TestParseJSONCompactTimeZones(t *testing.T) {
	in := `{"meta":[{"name":"tokyo","type":"DateTime('Asia/Tokyo')"},{"name":"ny","type":"Nullable(DateTime64(3, 'America/New_York'))"},` +
		`{"name":"none","type":"DateTime"},{"name":"arr","type":"Array(DateTime('Asia/Tokyo'))"}],` +
		`"data":[["2026-03-04 05:06:07","2026-07-01 08:00:00.250","2026-03-04 05:06:07",["2026-03-04 09:00:00"]]]}`
	res, err := ParseJSONCompact([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []any{
		time.Date(2026, 3, 3, 20, 6, 7, 0, time.UTC), time.Date(2026, 7, 1, 12, 0, 0, 250e6, time.UTC),
		time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC), []any{time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC)},
	}
	for i, w := range want {
		if got := res.Rows[0][i]; !reflect.DeepEqual(got, w) {
			t.Errorf("%s = %v, want %v", res.Columns[i].Name, got, w)
		}
	}
}

func TestBlockCheck(t *testing.T) {
	a, b := NewUInt32("a"), NewString("b")
	a.Append(1, 2)
	b.Append("x")
	blk := NewBlock(a, b)
	if blk.Rows() != -1 || blk.Check() == nil {
		t.Fatal("columns of different lengths accepted")
	}
	if _, err := blk.AppendNative(nil); err == nil {
		t.Fatal("inconsistent block encoded")
	}
	b.Append("y")
	if _, err := blk.AppendNative(nil); err != nil {
		t.Fatal(err)
	}
	if err := NewBlock().Check(); err == nil {
		t.Fatal("block without columns accepted")
	}
}

func FuzzParseJSONCompact(f *testing.F) {
	f.Add([]byte(jsonCompactSample))
	f.Add([]byte(`{"meta":[],"data":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := ParseJSONCompact(data)
		if err != nil {
			return
		}
		for _, row := range res.Rows {
			if len(row) != len(res.Columns) {
				t.Fatalf("row of %d values for %d columns", len(row), len(res.Columns))
			}
			for _, v := range row {
				_ = FormatValue(v)
			}
		}
	})
}
