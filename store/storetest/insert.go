package storetest

import (
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
)

// AllTypesTable creates table t with a column for each of AllTypesBlock's, in the
// types gpupool's tables declare.
const AllTypesTable = `CREATE TABLE t (ts DateTime64(3, 'UTC'), u16 UInt16, u32 UInt32, u64 UInt64, i32 Int32,
	f32 Float32, nf Nullable(Float32), s LowCardinality(String), arr Array(LowCardinality(String)),
	m Map(LowCardinality(String), String)) ENGINE = MergeTree ORDER BY ts`

// AllTypesBlock is a block with one column of every store column type, three rows.
func AllTypesBlock() *store.Block {
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
	for i := 0; i < 3; i++ {
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
	return store.NewBlock(ts, u16, u32, u64, i32, f32, nf, s, arr, m)
}

// AllTypesRow1 is AllTypesBlock's second row as a store.Result holds it: NULL for
// the missing float, unsigned integers widened to uint64, signed to int64.
func AllTypesRow1() []any {
	return []any{
		time.Date(2026, 12, 1, 8, 0, 1, 250e6, time.UTC), uint64(2), uint64(1<<31 + 1), uint64(1<<63 + 1),
		int64(-1), 1.5, nil, "it's", []any{"a"}, map[string]any{"team": "ml", "k": "y"},
	}
}

func testInsertAndQueryTypes(t *testing.T, b Backend) {
	ctx := t.Context()
	s := b.open(t, AllTypesTable)
	if err := s.Insert(ctx, "t", AllTypesBlock(), ""); err != nil {
		t.Fatal(err)
	}
	res, err := s.Query(ctx, "SELECT * FROM t ORDER BY ts", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 3 {
		t.Fatalf("got %d rows, want 3", len(res.Rows))
	}
	for i, w := range AllTypesRow1() {
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

func testInsertDeduplicationToken(t *testing.T, b Backend) {
	ctx, s := t.Context(), b.migrated(t)
	now := time.Now().UnixMilli()
	mk := func(pid uint32) *store.Block {
		ts, node, gpu, p := store.NewDateTime64Ms("ts"), store.NewString("node"), store.NewString("gpu_uuid"), store.NewUInt32("pid")
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
		if n := Count(t, s, "process_samples"); n != step.want {
			t.Fatalf("after insert with token %q: %d rows, want %d", step.token, n, step.want)
		}
	}
}

// testInsertSameMapTwice inserts one block of job events twice without a token:
// the table's data-hash deduplication drops the second only if the bytes are
// equal, which needs map keys sent in a fixed order.
func testInsertSameMapTwice(t *testing.T, b Backend) {
	ctx, s := t.Context(), b.migrated(t)
	ts, job, event, labels := store.NewDateTime64Ms("ts"), store.NewString("job"), store.NewString("event"), store.NewStringMap("labels")
	ts.Append(time.Now().UnixMilli())
	job.Append("j1")
	event.Append("submit")
	m := map[string]string{}
	for _, k := range strings.Fields("a b c d e f g h i j k l m n o p") {
		m[k] = k
	}
	labels.Append(m)
	blk := store.NewBlock(ts, job, event, labels)
	for range 2 {
		if err := s.Insert(ctx, "job_events", blk, ""); err != nil {
			t.Fatal(err)
		}
	}
	if n := Count(t, s, "job_events"); n != 1 {
		t.Fatalf("%d rows after inserting the same block twice, want 1 (deduplicated)", n)
	}
}

// testInsertWidens: a block column of a narrower type than the table's goes in
// widened.
func testInsertWidens(t *testing.T, b Backend) {
	ctx := t.Context()
	s := b.open(t, "CREATE TABLE w (a UInt64, b Float64, c UInt16) ENGINE = MergeTree ORDER BY a")
	a, f, c := store.NewUInt32("a"), store.NewFloat32("b"), store.NewUInt16("c")
	a.Append(math.MaxUint32)
	f.Append(0.5)
	c.Append(9)
	if err := s.Insert(ctx, "w", store.NewBlock(a, f, c), ""); err != nil {
		t.Fatalf("widening insert: %v", err)
	}
	res, err := s.Query(ctx, "SELECT a, b FROM w", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 1 || !reflect.DeepEqual(res.Rows[0], []any{uint64(math.MaxUint32), 0.5}) {
		t.Errorf("rows = %#v", res.Rows)
	}
}

// testInsertRefusesNarrowing: a block column of a wider type than the table's is
// refused, naming the column and both types, and nothing of it is written.
func testInsertRefusesNarrowing(t *testing.T, b Backend) {
	ctx := t.Context()
	s := b.open(t, "CREATE TABLE w (c UInt16) ENGINE = MergeTree ORDER BY c", "INSERT INTO w VALUES (9)")
	wide := store.NewUInt32("c")
	wide.Append(70000) // 4464 once cut to 16 bits
	err := s.Insert(ctx, "w", store.NewBlock(wide), "")
	if err == nil || !strings.Contains(err.Error(), "column c (UInt32 into UInt16)") {
		t.Fatalf("narrowing insert: err = %v, want one naming column c and both types", err)
	}
	if n := Count(t, s, "w"); n != 1 {
		t.Errorf("%d rows after a refused insert, want 1", n)
	}
}

func testLowCardinalityNative(t *testing.T, b Backend) {
	ctx := t.Context()
	s := b.open(t, "CREATE TABLE lc (i UInt32, s LowCardinality(String)) ENGINE = MergeTree ORDER BY i")
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
		exec(t, s, "TRUNCATE TABLE lc")
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
