package console

import (
	"context"
	"fmt"
	"math"
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
	return &rows{r: store.Read(res, "console: "+what)}, nil
}

// rows reads a result's cells by row and column name with store.Rows' rules: a
// missing column or a cell of the wrong type is an error, the first kept, which
// the page checks (err) once it has read its rows and shows as its generic
// error. The console's own choices are in the names: num is NaN for NULL (a gap
// in a chart), num0 is 0 for NULL and NaN, opt is nil for either.
type rows struct {
	r *store.Rows
}

func (r *rows) n() int { return r.r.Len() }

// err is the first error met reading the rows.
func (r *rows) err() error { return r.r.Err() }

func (r *rows) str(i int, col string) string { return r.r.At(i).Str(col) }

// num is a number; NULL is NaN.
func (r *rows) num(i int, col string) float64 { return r.r.At(i).FloatOr(col, math.NaN()) }

// num0 is a number; NULL and NaN are 0.
func (r *rows) num0(i int, col string) float64 {
	if v := r.r.At(i).Float(col); !math.IsNaN(v) {
		return v
	}
	return 0
}

// opt is a number; NULL and NaN are nil.
func (r *rows) opt(i int, col string) *float64 {
	if v := r.r.At(i).NullFloat(col); v != nil && !math.IsNaN(*v) {
		return v
	}
	return nil
}

// flag is a Bool or UInt8 column; NULL is false.
func (r *rows) flag(i int, col string) bool { return r.r.At(i).Bool(col) }

// time is a time; NULL is the zero time.
func (r *rows) time(i int, col string) time.Time { return r.r.At(i).Time(col) }

func (r *rows) strs(i int, col string) []string { return r.r.At(i).Strs(col) }

// floats is an Array of numbers; NULL is empty, a NULL element NaN.
func (r *rows) floats(i int, col string) []float64 { return r.r.At(i).Floats(col) }

// dataNow is the newest minute the store holds (the data_clock view; the wall
// clock when it holds none): the console's "now", so a simulated fleet's last day is "the last 24
// hours".
func (c *Console) dataNow(ctx context.Context) time.Time {
	r, err := c.query(ctx, "data clock", `SELECT minute AS now FROM data_clock`, nil)
	if err == nil && r.n() == 1 {
		if t := r.time(0, "now"); r.err() == nil && t.Unix() > 0 {
			return t.Add(time.Minute)
		}
	}
	return time.Now().UTC().Truncate(time.Minute)
}

// nan marks a missing value in a chart series.
var nan = math.NaN()
