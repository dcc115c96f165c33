package billing

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/reports"
	"github.com/gpupool/gpupool/store"
)

// failuresOnly answers the failures query with its rows and every other query
// with none.
type failuresOnly struct{ res *store.Result }

func (f failuresOnly) Query(_ context.Context, sql string, _ store.Params) (*store.Result, error) {
	if strings.Contains(sql, "job_failures_between") {
		return f.res, nil
	}
	return &store.Result{}, nil
}

func failuresResult(cols ...string) *store.Result {
	vals := map[string]any{"reason": "oom", "n": int64(2), "total": int64(4), "gpu_hours": math.NaN(), "cost": math.NaN(), "failed_rerun_cost": nil}
	res := &store.Result{Rows: [][]any{nil}}
	for _, c := range cols {
		res.Columns = append(res.Columns, store.ColumnMeta{Name: c})
		res.Rows[0] = append(res.Rows[0], vals[c])
	}
	return res
}

func testPeriod(t *testing.T) reports.Period {
	t.Helper()
	p, err := reports.ParsePeriod("2026-11", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A figure the engine gives as NaN is 0 in the report and an amount is unknown
// (nil): the report's choice, made where it reads.
func TestBuildReadsNaNAsTheReportChooses(t *testing.T) {
	q := failuresOnly{failuresResult("reason", "n", "total", "gpu_hours", "cost", "failed_rerun_cost")}
	r, err := Build(context.Background(), q, testPeriod(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Failures) != 1 {
		t.Fatalf("failures = %+v", r.Failures)
	}
	f := r.Failures[0]
	if f.GPUHours != 0 || f.Cost != nil || f.FailedRerunCost != nil || f.Attempts != 2 || f.Rate != 0.5 || r.EndedAttempts != 4 {
		t.Errorf("failure = %+v, ended %d", f, r.EndedAttempts)
	}
}

func TestBuildFailsOnAMissingColumnNamingTheQuery(t *testing.T) {
	q := failuresOnly{failuresResult("reason", "n", "gpu_hours", "cost", "failed_rerun_cost")}
	_, err := Build(context.Background(), q, testPeriod(t))
	if err == nil || !strings.Contains(err.Error(), "failures") || !strings.Contains(err.Error(), `"total"`) {
		t.Fatalf("err = %v, want one naming the failures query and the column total", err)
	}
}
