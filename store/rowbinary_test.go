package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// rbWriter builds RowBinaryWithNamesAndTypes output for the tests.
type rbWriter struct{ b []byte }

func (w *rbWriter) uvarint(n uint64) *rbWriter { w.b = binary.AppendUvarint(w.b, n); return w }
func (w *rbWriter) str(s string) *rbWriter {
	w.uvarint(uint64(len(s)))
	w.b = append(w.b, s...)
	return w
}
func (w *rbWriter) raw(p ...byte) *rbWriter { w.b = append(w.b, p...); return w }
func (w *rbWriter) u32(v uint32) *rbWriter  { w.b = binary.LittleEndian.AppendUint32(w.b, v); return w }
func (w *rbWriter) f64(v float64) *rbWriter {
	w.b = binary.LittleEndian.AppendUint64(w.b, math.Float64bits(v))
	return w
}

// header writes the column names and types ("name Type", …).
func (w *rbWriter) header(cols ...string) *rbWriter {
	w.uvarint(uint64(len(cols)))
	for _, c := range cols {
		w.str(strings.SplitN(c, " ", 2)[0])
	}
	for _, c := range cols {
		w.str(strings.SplitN(c, " ", 2)[1])
	}
	return w
}

var timelineCols = []string{"gpu LowCardinality(String)", "minute DateTime('UTC')", "sm Nullable(Float64)", "fb UInt32"}

// timelineRows is n rows of a job timeline's shape, in RowBinary and in JSONCompact.
func timelineRows(n int) (bin, js []byte) {
	w := (&rbWriter{}).header(timelineCols...)
	var j strings.Builder
	j.WriteString(`{"meta":[{"name":"gpu","type":"LowCardinality(String)"},{"name":"minute","type":"DateTime('UTC')"},{"name":"sm","type":"Nullable(Float64)"},{"name":"fb","type":"UInt32"}],"data":[`)
	t0 := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	for i := range n {
		gpu := fmt.Sprintf("GPU-%08d", i%16)
		at := t0.Add(time.Duration(i) * time.Minute)
		w.str(gpu).u32(uint32(at.Unix()))
		sm := "null"
		if i%7 == 0 {
			w.raw(1)
		} else {
			w.raw(0).f64(float64(i) / 7)
			sm = fmt.Sprint(float64(i) / 7)
		}
		w.u32(uint32(i))
		if i > 0 {
			j.WriteByte(',')
		}
		fmt.Fprintf(&j, `["%s","%s",%s,%d]`, gpu, at.Format(time.DateTime), sm, i)
	}
	j.WriteString(`],"rows":1}`)
	return w.b, []byte(j.String())
}

func TestParseRowBinaryMatchesJSON(t *testing.T) {
	bin, js := timelineRows(600)
	got, err := ParseRowBinary(bin)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ParseJSONCompact(js)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.Columns) != fmt.Sprint(want.Columns) || len(got.Rows) != len(want.Rows) {
		t.Fatalf("columns %v, %d rows; want %v, %d rows", got.Columns, len(got.Rows), want.Columns, len(want.Rows))
	}
	for r := range want.Rows {
		if fmt.Sprint(got.Rows[r]) != fmt.Sprint(want.Rows[r]) {
			t.Fatalf("row %d = %v, want %v", r, got.Rows[r], want.Rows[r])
		}
	}
}

// TestParseRowBinaryCutShort: output cut at any byte is an error naming where,
// never a panic or a short result taken for the whole.
func TestParseRowBinaryCutShort(t *testing.T) {
	bin, _ := timelineRows(3)
	full, err := ParseRowBinary(bin)
	if err != nil {
		t.Fatal(err)
	}
	header := len((&rbWriter{}).header(timelineCols...).b)
	rowEnds := map[int]bool{}
	for i := 1; i < len(bin); i++ {
		res, err := ParseRowBinary(bin[:i])
		if err == nil {
			// A cut between rows is a shorter result: the engine's output
			// is whole, so only those cuts parse.
			rowEnds[len(res.Rows)] = true
			continue
		}
		if i > header && !strings.Contains(err.Error(), "row ") {
			t.Errorf("cut at %d: %v, want the row and column named", i, err)
		}
	}
	if len(rowEnds) > len(full.Rows) {
		t.Errorf("cuts parsed as %d different row counts, want at most %d", len(rowEnds), len(full.Rows))
	}
}

func TestParseRowBinaryBadInput(t *testing.T) {
	for name, data := range map[string][]byte{
		"array longer than the output":  (&rbWriter{}).header("a Array(UInt8)").uvarint(1 << 40).b,
		"enum value without a name":     (&rbWriter{}).header("e Enum8('a' = 1)").raw(2).b,
		"string longer than the output": (&rbWriter{}).header("s String").uvarint(10).raw('x').b,
		"more columns than bytes":       (&rbWriter{}).uvarint(1 << 20).b,
		"bytes after no columns":        (&rbWriter{}).uvarint(0).raw(1).b,
	} {
		if res, err := ParseRowBinary(data); err == nil {
			t.Errorf("%s: parsed as %+v, want an error", name, res)
		}
	}
}

func TestParseBinType(t *testing.T) {
	read := []string{"UInt8", "Int256", "LowCardinality(Nullable(String))", "Nullable(Nothing)", "DateTime('Asia/Tokyo')",
		"DateTime64(9, 'UTC')", "Decimal(76, 10)", "Decimal64(4)", "FixedString(16)", "Enum8('a,b' = 1, 'c\\'d' = 2)",
		"Array(Array(Nullable(Float32)))", "Tuple(UInt8, String)", "Map(LowCardinality(String), UInt64)",
		"SimpleAggregateFunction(sum, UInt64)", "SimpleAggregateFunction(anyLast, Nullable(Float64))", "UUID", "IPv4", "Date32", "Bool"}
	for _, typ := range read {
		if _, err := parseBinType(typ); err != nil {
			t.Errorf("parseBinType(%s): %v", typ, err)
		}
	}
	unsupported := []string{"Tuple(a UInt8, b String)", "IPv6", "IntervalSecond", "JSON", "Dynamic", "Variant(String, UInt8)",
		"AggregateFunction(sum, UInt64)", "Nothing", "Array(Nothing)", "Map(Date, UInt8)", "Tuple()", "Time", "BFloat16",
		"Decimal(80, 2)", "DateTime64(12)", "FixedString(0)", "Enum8('a' 1)", "Array(UInt8", "Object('json')"}
	for _, typ := range unsupported {
		if _, err := parseBinType(typ); !errors.Is(err, ErrUnsupportedType) {
			t.Errorf("parseBinType(%s) = %v, want ErrUnsupportedType", typ, err)
		}
	}
	e, err := parseBinType("Enum16('a,b' = -3, 'c\\'d' = 2)")
	if err != nil || e.names[-3] != "a,b" || e.names[2] != "c'd" || e.size != 2 {
		t.Errorf("Enum16 names %v size %v, %v", e.names, e.size, err)
	}
}

func FuzzParseRowBinary(f *testing.F) {
	bin, _ := timelineRows(4)
	f.Add(bin)
	f.Add((&rbWriter{}).header("a Array(Nullable(Int16))", "m Map(String, Tuple(UInt8, Decimal(38, 5)))").uvarint(2).raw(0, 1, 0, 1, 0xff).uvarint(0).b)
	f.Add((&rbWriter{}).header("u UUID", "e Enum16('x' = 1)", "d Date32").raw(make([]byte, 16)...).raw(1, 0, 0, 0, 0, 0).b)
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := ParseRowBinary(data)
		if err != nil {
			return
		}
		for i, row := range res.Rows {
			if len(row) != len(res.Columns) {
				t.Fatalf("row %d has %d cells for %d columns", i, len(row), len(res.Columns))
			}
		}
	})
}

// BenchmarkParseOutput reads the same 2,000 rows from each output format: the
// ratio is what reading RowBinary saves on every query.
func BenchmarkParseOutput(b *testing.B) {
	bin, js := timelineRows(2000)
	b.Run("JSONCompact", func(b *testing.B) {
		b.SetBytes(int64(len(js)))
		for b.Loop() {
			if _, err := ParseJSONCompact(js); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("RowBinary", func(b *testing.B) {
		b.SetBytes(int64(len(bin)))
		for b.Loop() {
			if _, err := ParseRowBinary(bin); err != nil {
				b.Fatal(err)
			}
		}
	})
}
