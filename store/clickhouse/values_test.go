package clickhouse

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/storetest"
)

// blockCols pairs each block column with a target table type and the values Insert
// would append to a batch column of that type.
func blockCols(t *testing.T, b *store.Block, targets []string) []testCol {
	t.Helper()
	cols := make([]testCol, len(b.Columns))
	for i, c := range b.Columns {
		v, err := columnValues(c, targets[i])
		if err != nil {
			t.Fatalf("columnValues(%s, %s): %v", c.Name(), targets[i], err)
		}
		cols[i] = testCol{name: c.Name(), typ: targets[i], values: v}
	}
	return cols
}

// TestColumnValuesMatchClickHouseGo checks that what Insert appends for each store
// column type is what clickhouse-go's column for the table's type accepts, and
// that the values survive the Native encoding: into the column's own type and into
// the types gpupool's tables declare (LowCardinality, Array(LowCardinality), Map
// with LowCardinality keys).
func TestColumnValuesMatchClickHouseGo(t *testing.T) {
	tests := []struct {
		name    string
		targets []string
	}{
		{"block's own types", nil},
		{"gpupool table types", []string{
			"DateTime64(3, 'UTC')", "UInt16", "UInt32", "UInt64", "Int32", "Float32", "Nullable(Float32)",
			"LowCardinality(String)", "Array(LowCardinality(String))", "Map(LowCardinality(String), String)",
		}},
		{"no time zone, nullable and low-cardinality wrappers", []string{
			"DateTime64(3)", "Nullable(UInt16)", "UInt32", "UInt64", "Int32", "Float32", "Nullable(Float32)",
			"LowCardinality(Nullable(String))", "Array(String)", "Map(String, String)",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := storetest.AllTypesBlock()
			targets := tt.targets
			if targets == nil {
				for _, c := range b.Columns {
					targets = append(targets, c.Type())
				}
			}
			res := roundTrip(t, blockCols(t, b, targets))
			if len(res.Rows) != 3 {
				t.Fatalf("got %d rows, want 3", len(res.Rows))
			}
			for i, w := range storetest.AllTypesRow1() {
				if got := res.Rows[1][i]; !reflect.DeepEqual(got, w) {
					t.Errorf("column %s (%s): got %#v, want %#v", res.Columns[i].Name, res.Columns[i].Type, got, w)
				}
			}
			if res.Columns[6].Type != targets[6] {
				t.Errorf("column type %q, want %q", res.Columns[6].Type, targets[6])
			}
			if v, _ := res.Float(2, "nf"); v != 0.5 {
				t.Errorf("nf row 2 = %v, want 0.5", v)
			}
			if v, _ := res.Float(1, "nf"); !math.IsNaN(v) {
				t.Errorf("NaN sent as %v, want NULL (read as NaN)", v)
			}
			if got := res.Rows[0][8]; !reflect.DeepEqual(got, []any{}) {
				t.Errorf("empty array read as %#v", got)
			}
		})
	}
}

func TestColumnValuesWiden(t *testing.T) {
	u16 := store.NewUInt16("u16")
	u16.Append(7)
	u32 := store.NewUInt32("u32")
	u32.Append(math.MaxUint32)
	i32 := store.NewInt32("i32")
	i32.Append(math.MinInt32)
	f32 := store.NewFloat32("f32")
	f32.Append(0.5)
	nf := store.NewNullableFloat32("nf")
	nf.Append(0.25)
	nf2 := store.NewNullableFloat32("nf2")
	nf2.Append(schemas.Missing)
	tests := []struct {
		col    store.Column
		target string
		want   any
	}{
		{u16, "UInt64", uint64(7)},
		{u16, "Nullable(Int32)", int64(7)},
		{u16, "Float64", 7.0},
		{u32, "Nullable(UInt64)", uint64(math.MaxUint32)},
		{u32, "Int64", int64(math.MaxUint32)},
		{i32, "Int64", int64(math.MinInt32)},
		{f32, "Float64", 0.5},
		{nf, "Nullable(Float64)", 0.25},
		{nf2, "Nullable(Float64)", nil},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s into %s", tt.col.Type(), tt.target), func(t *testing.T) {
			v, err := columnValues(tt.col, tt.target)
			if err != nil {
				t.Fatal(err)
			}
			res := roundTrip(t, []testCol{{name: tt.col.Name(), typ: tt.target, values: v}})
			if got := res.Rows[0][0]; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
		})
	}
	// Narrowing is not attempted: clickhouse-go refuses it, and Insert says which
	// column and types.
	v, err := columnValues(u32, "UInt16")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := v.([]uint32); !ok {
		t.Errorf("UInt32 into UInt16: values are %T, want the block's []uint32 unchanged", v)
	}
}

// TestColumnValuesIntoRollupTypes checks the columns ingest sends to
// process_minute (migration 0020: ingest writes the rollup) go into the table's
// SimpleAggregateFunction types through clickhouse-go and read back as sent.
func TestColumnValuesIntoRollupTypes(t *testing.T) {
	minute := store.NewDateTime("minute")
	minute.Append(uint32(time.Date(2026, 12, 1, 8, 5, 0, 0, time.UTC).Unix()))
	node := store.NewLowCardinalityString("node")
	node.Append("gpu-a-001")
	samples := store.NewUInt64("samples")
	samples.Append(6)
	fbMax := store.NewUInt32("fb_used_mib_max")
	fbMax.Append(81000)
	smSum := store.NewFloat64("sm_util_sum")
	smSum.Append(2.75)
	tests := []struct {
		col    store.Column
		target string
		want   any
	}{
		{minute, "DateTime('UTC')", time.Date(2026, 12, 1, 8, 5, 0, 0, time.UTC)},
		{node, "SimpleAggregateFunction(any, LowCardinality(String))", "gpu-a-001"},
		{samples, "SimpleAggregateFunction(sum, UInt64)", uint64(6)},
		{fbMax, "SimpleAggregateFunction(max, UInt32)", uint64(81000)},
		{smSum, "SimpleAggregateFunction(sum, Float64)", 2.75},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s into %s", tt.col.Type(), tt.target), func(t *testing.T) {
			v, err := columnValues(tt.col, tt.target)
			if err != nil {
				t.Fatal(err)
			}
			data := encodeBlock(t, []testCol{{name: tt.col.Name(), typ: tt.target, values: v}})
			if len(data) == 0 {
				t.Fatal("nothing encoded")
			}
			res := roundTrip(t, []testCol{{name: tt.col.Name(), typ: tt.col.Type(), values: v}})
			if got := res.Rows[0][0]; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

// TestMapKeysSorted checks equal maps encode to equal bytes whatever Go's map
// iteration order, so data-hash deduplication sees a repeated insert as a repeat.
func TestMapKeysSorted(t *testing.T) {
	labels := map[string]string{}
	for i := range 32 {
		labels[fmt.Sprintf("k%02d", i)] = fmt.Sprint(i)
	}
	var first []byte
	for i := range 5 {
		m := store.NewStringMap("labels")
		m.Append(labels)
		v, err := columnValues(m, "Map(LowCardinality(String), String)")
		if err != nil {
			t.Fatal(err)
		}
		data := encodeBlock(t, []testCol{{name: "labels", typ: "Map(LowCardinality(String), String)", values: v}})
		if i == 0 {
			first = data
		} else if !bytes.Equal(data, first) {
			t.Fatal("the same map encoded to different bytes")
		}
	}
	if len(labels) != 32 {
		t.Fatal("columnValues changed the block's map")
	}
}

func TestInsertSQL(t *testing.T) {
	got := store.InsertStatement("gpupool", "gpu_samples", []string{"ts", "node", "gpu`uuid"})
	want := "INSERT INTO `gpupool`.`gpu_samples` (`ts`, `node`, `gpu\\`uuid`)"
	if got != want {
		t.Errorf("InsertStatement = %s, want %s", got, want)
	}
}

func TestInsertSettings(t *testing.T) {
	tests := []struct {
		name    string
		token   string
		async   bool
		cluster bool
		want    map[string]any
	}{
		{"plain", "", false, false, map[string]any{}},
		{"cluster inserts wait for every shard", "", false, true, map[string]any{"distributed_foreground_insert": 1}},
		{"token", "nats-1-42", false, false, map[string]any{
			"insert_deduplicate": 1, "insert_deduplication_token": "nats-1-42",
			"deduplicate_blocks_in_dependent_materialized_views": 1,
		}},
		{"token with quotes stays a value", `x', 1); --`, false, false, map[string]any{
			"insert_deduplicate": 1, "insert_deduplication_token": `x', 1); --`,
			"deduplicate_blocks_in_dependent_materialized_views": 1,
		}},
		{"async", "", true, false, map[string]any{"async_insert": 1, "wait_for_async_insert": 1}},
		{"async with token", "t", true, false, map[string]any{
			"insert_deduplicate": 1, "insert_deduplication_token": "t",
			"deduplicate_blocks_in_dependent_materialized_views": 1,
			"async_insert": 1, "wait_for_async_insert": 1, "async_insert_deduplicate": 1,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := insertSettings(tt.token, tt.async, tt.cluster); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("insertSettings = %v, want %v", got, tt.want)
			}
		})
	}
}
