package store

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Querier runs a read-only query; Store implements it. Packages that only read
// take a Querier (a package that needs more, such as Database, embeds it in an
// interface of its own).
type Querier interface {
	Query(ctx context.Context, sql string, params Params) (*Result, error)
}

var _ Querier = Store(nil)

// Rows reads a Result's cells by column name, one row at a time, and keeps the
// first error, so that decoding a row is a list of assignments followed by one
// check of Err. Its rules (the package's one way to read rows):
//
//   - A missing column is an error naming the column and the query (what Read was
//     given): the queries are the program's own, so a missing column is a bug.
//   - A cell of the wrong type (text where a number is wanted, a number where a
//     time is) is an error too. Text that parses as a number is a number
//     (SimpleAggregateFunction columns come back as text).
//   - NULL is the type's zero value (0, "", false, the zero time, an empty
//     slice or map), unless the caller asks for the nullable form: FloatOr (NULL is the
//     value given, often NaN), NullFloat and NullTime (NULL is nil).
//   - NaN from the engine is NaN: Float returns it as is, and NullFloat returns a
//     pointer to it. A caller that wants NaN as 0 says so where it reads.
//
// After the first error every read returns the zero value and Next returns
// false.
type Rows struct {
	res  *Result
	what string
	row  int
	idx  map[string]int
	err  error
}

// Read returns a reader of res positioned before its first row; what names the
// query in errors ("findings", "fleet page: cards").
func Read(res *Result, what string) *Rows {
	if res == nil {
		res = &Result{}
	}
	return &Rows{res: res, what: what, row: -1, idx: make(map[string]int, len(res.Columns))}
}

// Len is the number of rows.
func (r *Rows) Len() int { return len(r.res.Rows) }

// Next moves to the next row; false after the last row or after an error.
func (r *Rows) Next() bool {
	if r.err != nil || r.row+1 >= len(r.res.Rows) {
		r.row = len(r.res.Rows)
		return false
	}
	r.row++
	return true
}

// At moves to row i (for readers that index rows themselves) and returns r; an
// i out of range is an error.
func (r *Rows) At(i int) *Rows {
	if i < 0 || i >= len(r.res.Rows) {
		r.fail(fmt.Errorf("no row %d of %d", i, len(r.res.Rows)))
	}
	r.row = i
	return r
}

// Has reports whether the result has the named column (for a query whose
// columns vary, such as one grouping set of several).
func (r *Rows) Has(name string) bool { return r.res.Index(name) >= 0 }

// Err is the first error met, or nil.
func (r *Rows) Err() error { return r.err }

func (r *Rows) fail(err error) {
	if r.err == nil {
		r.err = fmt.Errorf("store: %s: row %d: %w", r.what, r.row, err)
	}
}

// cell is the named cell of the current row; ok is false after an error.
func (r *Rows) cell(name string) (any, bool) {
	if r.err != nil {
		return nil, false
	}
	j, seen := r.idx[name]
	if !seen {
		j = r.res.Index(name)
		r.idx[name] = j
	}
	if j < 0 {
		r.fail(fmt.Errorf("no column %q", name))
		return nil, false
	}
	if r.row < 0 || r.row >= len(r.res.Rows) {
		r.fail(fmt.Errorf("column %q read with no current row (call Next)", name))
		return nil, false
	}
	return r.res.Rows[r.row][j], true
}

// Str is a cell as text (FormatValue); NULL is "".
func (r *Rows) Str(name string) string {
	v, _ := r.cell(name)
	return FormatValue(v)
}

// Int is an integer cell (a float is truncated); NULL is 0.
func (r *Rows) Int(name string) int64 {
	v, ok := r.cell(name)
	if !ok {
		return 0
	}
	n, err := toInt(v)
	if err != nil {
		r.fail(fmt.Errorf("column %q: %w", name, err))
	}
	return n
}

// Float is a numeric cell; NULL is 0 and NaN stays NaN.
func (r *Rows) Float(name string) float64 { return r.FloatOr(name, 0) }

// FloatOr is a numeric cell; NULL is null (NaN, to keep "unknown" apart from 0).
func (r *Rows) FloatOr(name string, null float64) float64 {
	if f := r.NullFloat(name); f != nil {
		return *f
	}
	return null
}

// NullFloat is a numeric cell; NULL is nil (NaN is a pointer to NaN).
func (r *Rows) NullFloat(name string) *float64 {
	v, ok := r.cell(name)
	if !ok || v == nil {
		return nil
	}
	f, err := toFloat(v)
	if err != nil {
		r.fail(fmt.Errorf("column %q: %w", name, err))
		return nil
	}
	return &f
}

// Bool is a Bool or integer (UInt8) cell; NULL is false.
func (r *Rows) Bool(name string) bool {
	v, ok := r.cell(name)
	if !ok || v == nil {
		return false
	}
	if b, isBool := v.(bool); isBool {
		return b
	}
	f, err := toFloat(v)
	if err != nil {
		r.fail(fmt.Errorf("column %q: %w", name, err))
	}
	return f != 0
}

// Time is a Date or DateTime cell in UTC; NULL is the zero time.
func (r *Rows) Time(name string) time.Time {
	if t := r.NullTime(name); t != nil {
		return *t
	}
	return time.Time{}
}

// NullTime is a Date or DateTime cell in UTC; NULL is nil.
func (r *Rows) NullTime(name string) *time.Time {
	v, ok := r.cell(name)
	if !ok || v == nil {
		return nil
	}
	t, isTime := v.(time.Time)
	if !isTime {
		r.fail(fmt.Errorf("column %q is %T, not a time", name, v))
		return nil
	}
	t = t.UTC()
	return &t
}

// Strs is an Array cell, each element as text (FormatValue); NULL is an empty,
// non-nil slice (so that JSON shows []).
func (r *Rows) Strs(name string) []string {
	arr := r.array(name)
	out := make([]string, 0, len(arr))
	for _, v := range arr {
		out = append(out, FormatValue(v))
	}
	return out
}

// Floats is an Array of numbers; NULL is an empty, non-nil slice. A NULL element
// (Array(Nullable(Float64))) is NaN: a slice of float64 has no other way to keep
// it apart from 0.
func (r *Rows) Floats(name string) []float64 {
	arr := r.array(name)
	out := make([]float64, 0, len(arr))
	for i, v := range arr {
		if v == nil {
			out = append(out, math.NaN())
			continue
		}
		f, err := toFloat(v)
		if err != nil {
			r.fail(fmt.Errorf("column %q element %d: %w", name, i, err))
			return []float64{}
		}
		out = append(out, f)
	}
	return out
}

// StrMap is a Map cell, each value as text (FormatValue); NULL is an empty,
// non-nil map.
func (r *Rows) StrMap(name string) map[string]string {
	v, ok := r.cell(name)
	if !ok || v == nil {
		return map[string]string{}
	}
	m, isMap := v.(map[string]any)
	if !isMap {
		r.fail(fmt.Errorf("column %q is %T, not a map", name, v))
		return map[string]string{}
	}
	out := make(map[string]string, len(m))
	for k, x := range m {
		out[k] = FormatValue(x)
	}
	return out
}

func (r *Rows) array(name string) []any {
	v, ok := r.cell(name)
	if !ok || v == nil {
		return nil
	}
	arr, isArr := v.([]any)
	if !isArr {
		r.fail(fmt.Errorf("column %q is %T, not an array", name, v))
	}
	return arr
}

func toFloat(v any) (float64, error) {
	switch x := v.(type) {
	case float64:
		return x, nil
	case int64:
		return float64(x), nil
	case uint64:
		return float64(x), nil
	case bool:
		if x {
			return 1, nil
		}
		return 0, nil
	case string:
		f, err := strconv.ParseFloat(x, 64)
		if err != nil {
			return 0, fmt.Errorf("text %q is not a number", x)
		}
		return f, nil
	}
	return 0, fmt.Errorf("%T is not a number", v)
}

func toInt(v any) (int64, error) {
	switch x := v.(type) {
	case nil:
		return 0, nil
	case int64:
		return x, nil
	case uint64:
		if x > math.MaxInt64 {
			return 0, fmt.Errorf("%d overflows int64", x)
		}
		return int64(x), nil
	case float64:
		return int64(x), nil
	case bool:
		if x {
			return 1, nil
		}
		return 0, nil
	case string:
		n, err := strconv.ParseInt(x, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("text %q is not an integer", x)
		}
		return n, nil
	}
	return 0, fmt.Errorf("%T is not an integer", v)
}
