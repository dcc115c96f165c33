package chargeback

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gpupool/gpupool/store"
)

// checkGolden compares got with testdata/name, rewriting it under -update.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./analyzer/chargeback -run %s -update)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (rerun with -update if the change is intended):\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

// table runs q and formats its result as a pipe-separated table, floats to 12
// significant digits so that float noise in the last bits does not show.
func table(t *testing.T, s store.Store, q string, p store.Params) string {
	t.Helper()
	res, err := s.Query(context.Background(), q, p)
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	for i, c := range res.Columns {
		if i > 0 {
			sb.WriteString(" | ")
		}
		sb.WriteString(c.Name)
	}
	sb.WriteByte('\n')
	for _, row := range res.Rows {
		for i, v := range row {
			if i > 0 {
				sb.WriteString(" | ")
			}
			if f, ok := v.(float64); ok {
				if f > -5e-10 && f < 5e-10 {
					f = 0 // -0 and float noise around zero
				}
				sb.WriteString(strconv.FormatFloat(f, 'g', 12, 64))
				continue
			}
			sb.WriteString(store.FormatValue(v))
		}
		sb.WriteByte('\n')
	}
	return sb.String()
}
