package reports

import (
	"bytes"
	"flag"
	"github.com/parquet-go/parquet-go"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpupool/gpupool/store"
)

var update = flag.Bool("update", false, "rewrite golden files")

func sample() *store.Result {
	return &store.Result{
		Columns: []store.ColumnMeta{
			{Name: "team", Type: "LowCardinality(String)"},
			{Name: "card", Type: "String"},
			{Name: "gpu_hours", Type: "Float64"},
			{Name: "jobs", Type: "UInt64"},
			{Name: "first_start", Type: "Nullable(DateTime64(3, 'UTC'))"},
			{Name: "tags", Type: "Array(String)"},
		},
		Rows: [][]any{
			{"nlp", "H100-80GB", 1234.56789, uint64(42), time.Date(2026, 12, 1, 8, 0, 0, 250e6, time.UTC), []any{"a", "b"}},
			{"vision, \"cv\"", "L40S-48GB", 0.5, uint64(7), nil, []any{}},
			{"ünïcode", "A100-40GB", math.NaN(), uint64(0), time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), []any{"x"}},
		},
	}
}

func TestFormatsGolden(t *testing.T) {
	for _, format := range []string{FormatTable, FormatCSV, FormatJSON} {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Write(&buf, sample(), format); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "sample."+format+".golden")
			if *update {
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./reports -update to create it)", err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Errorf("%s output differs from %s:\n%s", format, golden, buf.String())
			}
		})
	}
}

func TestWriteUnknownFormat(t *testing.T) {
	if err := Write(&bytes.Buffer{}, sample(), "xml"); err == nil {
		t.Fatal("unknown format accepted")
	}
}

func TestParquetRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteParquet(&buf, sample()); err != nil {
		t.Fatal(err)
	}
	f, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if f.NumRows() != 3 {
		t.Fatalf("%d rows, want 3", f.NumRows())
	}
	rows := make([]parquet.Row, 3)
	r := parquet.NewReader(f)
	n, _ := r.ReadRows(rows)
	if n != 3 {
		t.Fatalf("read %d rows", n)
	}
	col := func(name string) int {
		l, ok := f.Schema().Lookup(name)
		if !ok {
			t.Fatalf("no column %s", name)
		}
		return l.ColumnIndex
	}
	if got := rows[0][col("team")].String(); got != "nlp" {
		t.Errorf("team = %q", got)
	}
	if got := rows[0][col("jobs")].Int64(); got != 42 {
		t.Errorf("jobs = %d", got)
	}
	if got := rows[0][col("gpu_hours")].Double(); got != 1234.56789 {
		t.Errorf("gpu_hours = %v", got)
	}
	if !rows[1][col("first_start")].IsNull() {
		t.Error("NULL time was not written as NULL")
	}
	if got := rows[0][col("first_start")].Int64(); got != time.Date(2026, 12, 1, 8, 0, 0, 250e6, time.UTC).UnixMilli() {
		t.Errorf("first_start = %d", got)
	}
	if got := rows[0][col("tags")].String(); got != `["a","b"]` {
		t.Errorf("tags = %q", got)
	}
}

func TestCount(t *testing.T) {
	for n, want := range map[uint64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", 100000: "100,000"} {
		if got := Count(n); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
}
