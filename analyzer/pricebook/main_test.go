package pricebook

import (
	"context"
	"math"
	"testing"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

func TestMain(m *testing.M) { chdbtest.Main(m) }

// openStore returns a migrated store of its own with an empty price book.
func openStore(t *testing.T) store.Store {
	t.Helper()
	s := chdbtest.Open(t)
	if _, err := store.Migrate(t.Context(), s, schemas.MigrationParams{RawTTLDays: 3650}); err != nil {
		t.Fatal(err)
	}
	return s
}

// shortStore answers every query with one row of one column, "other", as a
// query edited without its reader would.
type shortStore struct{}

func (shortStore) Query(context.Context, string, store.Params) (*store.Result, error) {
	return &store.Result{Columns: []store.ColumnMeta{{Name: "other"}}, Rows: [][]any{{int64(1)}}}, nil
}

func (shortStore) Exec(context.Context, string, store.Params) error { return nil }

func near(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}
