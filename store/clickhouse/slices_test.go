package clickhouse

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/storetest"
)

// Insert sends a block in slices of rows (insertSliceRows; 3 here). These tests
// hold the slices to the exactly-once rule ingest relies on: an insert retried
// with its token stores every row once, whether the first try went through or
// failed part way.

const sliceTable = "CREATE TABLE sl (x UInt32, lc LowCardinality(String), s String) " +
	"ENGINE = MergeTree ORDER BY x SETTINGS non_replicated_deduplication_window = 100"

// sliceBlock is rows 1..n: x, a LowCardinality value of a few distinct ones, and
// a string; x's column is c when given (a column that fails part way).
func sliceBlock(n int, x store.Column) *store.Block {
	xs, lc, s := store.NewUInt32("x"), store.NewLowCardinalityString("lc"), store.NewString("s")
	for i := 1; i <= n; i++ {
		xs.Append(uint32(i))
		lc.Append(fmt.Sprintf("v%d", i%4))
		s.Append(fmt.Sprintf("s%d", i))
	}
	if x == nil {
		x = xs
	}
	return store.NewBlock(x, lc, s)
}

// sliceRowsOK checks the table holds rows 1..n once each, with their values.
func sliceRowsOK(t *testing.T, s *Store, n int) {
	t.Helper()
	res, err := s.Query(t.Context(), "SELECT x, lc, s FROM sl ORDER BY x", nil)
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	for i, row := range res.Rows {
		want := []any{uint32(i + 1), fmt.Sprintf("v%d", (i+1)%4), fmt.Sprintf("s%d", i+1)}
		if fmt.Sprint(row) != fmt.Sprint(want) {
			bad = append(bad, fmt.Sprintf("row %d = %v, want %v", i+1, row, want))
		}
	}
	if len(res.Rows) != n || len(bad) > 0 {
		t.Fatalf("%d rows, want %d once each: %s", len(res.Rows), n, strings.Join(bad, "; "))
	}
}

func TestServerInsertSlicesRetried(t *testing.T) {
	for _, async := range []bool{false, true} {
		t.Run(fmt.Sprintf("async=%v", async), func(t *testing.T) {
			ctx, cfg := t.Context(), serverConfig(t)
			cfg.AsyncInsert = async
			s := openServerConfig(t, cfg)
			s.slice = 3
			if err := s.Exec(ctx, sliceTable, nil); err != nil {
				t.Fatal(err)
			}
			for try := range 2 {
				if err := s.Insert(ctx, "sl", sliceBlock(10, nil), "batch-1"); err != nil {
					t.Fatalf("try %d: %v", try+1, err)
				}
			}
			sliceRowsOK(t, s, 10)
			// The same rows with another token are another insert.
			if err := s.Insert(ctx, "sl", sliceBlock(10, nil), "batch-2"); err != nil {
				t.Fatal(err)
			}
			if n := storetest.Count(t, s, "sl"); n != 20 {
				t.Fatalf("%d rows after a second token, want 20", n)
			}
		})
	}
}

// failingCol is a UInt32 column that calls second when Insert takes its values
// for the second slice, after sending the first, and appends what it returns.
type failingCol struct {
	*store.UInt32Col
	calls  int
	second func() any
}

func (c *failingCol) Values() any {
	c.calls++
	if c.calls == 2 {
		return c.second()
	}
	return c.Data
}

// TestServerInsertCutOffRetried: an insert that fails after sending some of its
// slices stores none of them (the INSERT is never ended), and its retry stores
// every row once.
func TestServerInsertCutOffRetried(t *testing.T) {
	for _, tt := range []struct {
		name, want string
		second     func(cancel func(), data []uint32) any
	}{
		{"values refused", "column x", func(_ func(), data []uint32) any { return make([]string, len(data)) }},
		{"context cancelled", "context canceled", func(cancel func(), data []uint32) any { cancel(); return data }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := openServer(t)
			s.slice = 3
			if err := s.Exec(t.Context(), sliceTable, nil); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			x := store.NewUInt32("x")
			for i := 1; i <= 10; i++ {
				x.Append(uint32(i))
			}
			col := &failingCol{UInt32Col: x, second: func() any { return tt.second(cancel, x.Data) }}
			err := s.Insert(ctx, "sl", sliceBlock(10, col), "batch-1")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("insert failing in its second slice: err = %v, want one saying %q", err, tt.want)
			}
			if n := storetest.Count(t, s, "sl"); n != 0 {
				t.Fatalf("%d rows stored by the failed insert, want 0", n)
			}
			// The retry, as ingest makes it: the same rows, the same token.
			if err := s.Insert(t.Context(), "sl", sliceBlock(10, nil), "batch-1"); err != nil {
				t.Fatal(err)
			}
			sliceRowsOK(t, s, 10)
		})
	}
}
