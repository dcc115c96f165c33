package console

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/gpupool/gpupool/store"
)

const tsLayout = "2006-01-02 15:04:05.000"

func tsParam(t time.Time) string { return t.UTC().Format(tsLayout) }

// arrayParam is an Array(String) query parameter (store.ArrayParam).
func arrayParam(ss []string) string { return store.ArrayParam(ss) }

// teamParams sets the {all:UInt8} and {teams:Array(String)} parameters of a
// query scoped to the viewer's teams, which reads them as
// `({all:UInt8} = 1 OR team IN {teams:Array(String)})`.
func teamParams(p store.Params, v viewer) store.Params {
	if v.all {
		p["all"], p["teams"] = "1", "[]"
	} else {
		p["all"], p["teams"] = "0", arrayParam(v.teams)
	}
	return p
}

// query runs sql, naming what it was for in the error.
func (c *Console) query(ctx context.Context, what, sql string, p store.Params) (*rows, error) {
	res, err := c.st.Query(ctx, sql, p)
	if err != nil {
		return nil, fmt.Errorf("console: %s: %w", what, err)
	}
	return &rows{res: res, idx: map[string]int{}}, nil
}

// rows reads a result's cells by column name, with zero values for NULL and
// for a missing column (the queries are the console's own: a missing column is
// a bug the tests catch by the figures they check).
type rows struct {
	res *store.Result
	idx map[string]int
}

func (r *rows) n() int { return len(r.res.Rows) }

func (r *rows) cell(i int, col string) any {
	j, ok := r.idx[col]
	if !ok {
		j = r.res.Index(col)
		r.idx[col] = j
	}
	if j < 0 {
		return nil
	}
	return r.res.Rows[i][j]
}

func (r *rows) str(i int, col string) string { return store.FormatValue(r.cell(i, col)) }

// num is a number; NULL is NaN.
func (r *rows) num(i int, col string) float64 {
	switch x := r.cell(i, col).(type) {
	case float64:
		return x
	case int64:
		return float64(x)
	case uint64:
		return float64(x)
	case string: // a SimpleAggregateFunction column comes back as text
		if f, err := strconv.ParseFloat(x, 64); err == nil {
			return f
		}
	}
	return math.NaN()
}

// num0 is a number; NULL is 0.
func (r *rows) num0(i int, col string) float64 {
	if v := r.num(i, col); !math.IsNaN(v) {
		return v
	}
	return 0
}

func (r *rows) opt(i int, col string) *float64 {
	if v := r.num(i, col); !math.IsNaN(v) {
		return &v
	}
	return nil
}

// flag is a Bool or UInt8 column.
func (r *rows) flag(i int, col string) bool {
	if b, ok := r.cell(i, col).(bool); ok {
		return b
	}
	return r.num0(i, col) != 0
}

func (r *rows) time(i int, col string) time.Time {
	t, _ := r.cell(i, col).(time.Time)
	return t
}

func (r *rows) strs(i int, col string) []string {
	a, _ := r.cell(i, col).([]any)
	out := make([]string, 0, len(a))
	for _, v := range a {
		out = append(out, store.FormatValue(v))
	}
	return out
}

// dataNow is the newest minute the store holds (the wall clock when it holds
// none): the console's "now", so a simulated fleet's last day is "the last 24
// hours".
func (c *Console) dataNow(ctx context.Context) time.Time {
	r, err := c.query(ctx, "data clock", `SELECT max(minute) AS now FROM gpu_minute
WHERE minute >= (SELECT max(hour) FROM gpu_hour) - INTERVAL 1 HOUR`, nil)
	if err == nil && r.n() == 1 {
		if t := r.time(0, "now"); t.Unix() > 0 {
			return t.Add(time.Minute)
		}
	}
	return time.Now().UTC().Truncate(time.Minute)
}

// nan marks a missing value in a chart series.
var nan = math.NaN()
