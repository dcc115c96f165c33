package console

import (
	"context"
	"html"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/store"
)

// droppingStore answers every query without its result's last column, as a
// query that lost a column in an edit would.
type droppingStore struct{ Store }

func (d droppingStore) Query(ctx context.Context, sql string, p store.Params) (*store.Result, error) {
	res, err := d.Store.Query(ctx, sql, p)
	if err != nil || len(res.Columns) == 0 {
		return res, err
	}
	last := len(res.Columns) - 1
	out := &store.Result{Columns: res.Columns[:last]}
	for _, row := range res.Rows {
		out.Rows = append(out.Rows, row[:last])
	}
	return out, nil
}

// TestConsoleMissingColumnIsAnError: a page whose query lacks a column it reads
// answers the generic server error (never figures read as zero), and the log
// names the column.
func TestConsoleMissingColumnIsAnError(t *testing.T) {
	var logged lockedBuffer
	// The data clock's query loses its column too, so the pages' "now" is
	// pinned to the fixture's end: with the wall clock, the pools page's
	// seven days slide past the fixture and find no row to miss a column in.
	end := func() time.Time { return simStart.Add(simSpan) }
	c, err := New(DefaultConfig(), droppingStore{simStore(t)}, newGuard(t), WithLogger(slog.New(slog.NewTextHandler(&logged, nil))), WithClock(end))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c.Handler())
	t.Cleanup(srv.Close)
	for _, p := range []string{"/fleet", "/jobs", "/actions", "/pools", "/findings"} {
		code, body, _ := get(t, srv, p, "tok-admin", "Accept", "text/html")
		if code != http.StatusInternalServerError || !strings.Contains(body, html.EscapeString(internalErrorMessage)) {
			t.Errorf("%s with a column missing: %d, want 500 and the generic message\n%.400s", p, code, body)
		}
		if strings.Contains(body, "no column") {
			t.Errorf("%s: the response names the missing column (the log's to keep)", p)
		}
	}
	if !strings.Contains(logged.String(), "no column") {
		t.Errorf("the console's log lacks the missing column:\n%.1000s", logged.String())
	}
}
