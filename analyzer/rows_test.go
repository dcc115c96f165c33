package analyzer

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/store"
)

// shortStore answers every query with one row of one column, "other", as a
// query edited without its reader would.
type shortStore struct{ Store }

func (shortStore) Query(context.Context, string, store.Params) (*store.Result, error) {
	return &store.Result{Columns: []store.ColumnMeta{{Name: "other"}}, Rows: [][]any{{int64(1)}}}, nil
}

// TestReadersReportAMissingColumn: the pass's counts, and the pool utilisation
// fail with an error naming the missing column and the
// query, rather than reading zeros.
func TestReadersReportAMissingColumn(t *testing.T) {
	ctx, at := t.Context(), time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	s := &Service{st: shortStore{}}
	_, errOpen := s.openByKind(ctx, at)
	_, errUtil := s.utilisation(ctx, at.Add(-time.Hour), at)
	for name, c := range map[string]struct {
		err        error
		column, in string
	}{
		"openByKind":  {errOpen, `"kind"`, "open findings by kind"},
		"utilisation": {errUtil, `"pool"`, "pool utilisation"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.column) || !strings.Contains(c.err.Error(), c.in) {
			t.Errorf("%s: error %v, want one naming column %s and %q", name, c.err, c.column, c.in)
		}
	}
}
