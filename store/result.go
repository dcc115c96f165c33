package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ColumnMeta names a result column and its ClickHouse type.
type ColumnMeta struct {
	Name string
	Type string
}

// Result is the complete output of a query. Values are nil (NULL), int64, uint64,
// float64, bool, string, time.Time (UTC), []any (arrays, tuples) or map[string]any.
type Result struct {
	Columns []ColumnMeta
	Rows    [][]any
}

// Index returns the position of the named column, or -1.
func (r *Result) Index(name string) int {
	for i, c := range r.Columns {
		if c.Name == name {
			return i
		}
	}
	return -1
}

func (r *Result) cell(row int, name string) (any, error) {
	i := r.Index(name)
	if i < 0 {
		return nil, fmt.Errorf("store: result has no column %q", name)
	}
	if row < 0 || row >= len(r.Rows) {
		return nil, fmt.Errorf("store: result has no row %d", row)
	}
	return r.Rows[row][i], nil
}

// Float returns a numeric cell as float64; NULL is NaN.
func (r *Result) Float(row int, name string) (float64, error) {
	v, err := r.cell(row, name)
	if err != nil {
		return 0, err
	}
	if v == nil {
		return math.NaN(), nil
	}
	f, err := toFloat(v)
	if err != nil {
		return 0, fmt.Errorf("store: column %q: %w", name, err)
	}
	return f, nil
}

// Int returns an integer cell; NULL is 0.
func (r *Result) Int(row int, name string) (int64, error) {
	v, err := r.cell(row, name)
	if err != nil {
		return 0, err
	}
	switch x := v.(type) {
	case nil:
		return 0, nil
	case int64:
		return x, nil
	case uint64:
		if x > math.MaxInt64 {
			return 0, fmt.Errorf("store: column %q value %d overflows int64", name, x)
		}
		return int64(x), nil
	case float64:
		return int64(x), nil
	case string:
		return strconv.ParseInt(x, 10, 64)
	}
	return 0, fmt.Errorf("store: column %q is %T, not an integer", name, v)
}

// String returns a cell formatted as text; NULL is "".
func (r *Result) String(row int, name string) (string, error) {
	v, err := r.cell(row, name)
	if err != nil {
		return "", err
	}
	return FormatValue(v), nil
}

// FormatValue formats a result value as text for tables and CSV: times as
// "2006-01-02 15:04:05.000", NULL as "", floats in their shortest exact form.
func FormatValue(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case int64:
		return strconv.FormatInt(x, 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	case bool:
		return strconv.FormatBool(x)
	case time.Time:
		if x.Nanosecond() == 0 {
			return x.UTC().Format(time.DateTime)
		}
		return x.UTC().Format("2006-01-02 15:04:05.000")
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return fmt.Sprint(x)
		}
		return string(b)
	}
}

// jsonCompact is ClickHouse's JSONCompact output.
type jsonCompact struct {
	Meta []ColumnMeta `json:"meta"`
	Data [][]any      `json:"data"`
}

// ParseJSONCompact reads ClickHouse's JSONCompact output (with
// output_format_json_quote_64bit_integers=0 and output_format_json_quote_denormals=1)
// into a Result, converting each value by its column's type.
func ParseJSONCompact(data []byte) (*Result, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return &Result{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var jc jsonCompact
	if err := dec.Decode(&jc); err != nil {
		return nil, fmt.Errorf("store: parse query output: %w", err)
	}
	res := &Result{Columns: jc.Meta, Rows: jc.Data}
	for _, row := range res.Rows {
		if len(row) != len(res.Columns) {
			return nil, fmt.Errorf("store: query output row has %d values for %d columns", len(row), len(res.Columns))
		}
		for i := range row {
			v, err := fromJSON(res.Columns[i].Type, row[i])
			if err != nil {
				return nil, fmt.Errorf("store: column %s: %w", res.Columns[i].Name, err)
			}
			row[i] = v
		}
	}
	return res, nil
}

// unwrap removes a single-argument type wrapper, e.g. Nullable(T) → T.
func unwrap(typ, wrapper string) (string, bool) {
	if strings.HasPrefix(typ, wrapper+"(") && strings.HasSuffix(typ, ")") {
		return typ[len(wrapper)+1 : len(typ)-1], true
	}
	return typ, false
}

// splitTypeArgs splits "K, V" at top-level commas.
func splitTypeArgs(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}

// BaseType strips Nullable and LowCardinality wrappers.
func BaseType(typ string) string {
	for {
		t, ok := unwrap(typ, "Nullable")
		if !ok {
			t, ok = unwrap(typ, "LowCardinality")
		}
		if !ok {
			return typ
		}
		typ = t
	}
}

func fromJSON(typ string, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	typ = BaseType(typ)
	switch {
	case strings.HasPrefix(typ, "Array("):
		inner, _ := unwrap(typ, "Array")
		arr, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("want an array for %s, got %T", typ, v)
		}
		for i := range arr {
			x, err := fromJSON(inner, arr[i])
			if err != nil {
				return nil, err
			}
			arr[i] = x
		}
		return arr, nil
	case strings.HasPrefix(typ, "Map("):
		inner, _ := unwrap(typ, "Map")
		args := splitTypeArgs(inner)
		m, ok := v.(map[string]any)
		if !ok || len(args) != 2 {
			return nil, fmt.Errorf("want an object for %s, got %T", typ, v)
		}
		for k, x := range m {
			y, err := fromJSON(args[1], x)
			if err != nil {
				return nil, err
			}
			m[k] = y
		}
		return m, nil
	case strings.HasPrefix(typ, "Tuple("):
		inner, _ := unwrap(typ, "Tuple")
		args := splitTypeArgs(inner)
		arr, ok := v.([]any)
		if !ok {
			return v, nil // named tuples come as objects; keep them
		}
		for i := range arr {
			if i < len(args) {
				// Named tuple element types read "name Type".
				et := args[i]
				if f := strings.Fields(et); len(f) == 2 && !strings.Contains(f[0], "(") {
					et = f[1]
				}
				x, err := fromJSON(et, arr[i])
				if err != nil {
					return nil, err
				}
				arr[i] = x
			}
		}
		return arr, nil
	case typ == "Bool":
		b, ok := v.(bool)
		if !ok {
			return nil, fmt.Errorf("want a bool, got %T", v)
		}
		return b, nil
	case strings.HasPrefix(typ, "UInt") && !strings.HasPrefix(typ, "UInt128") && !strings.HasPrefix(typ, "UInt256"):
		return parseUint(v)
	case strings.HasPrefix(typ, "Int") && !strings.HasPrefix(typ, "Int128") && !strings.HasPrefix(typ, "Int256") && !strings.HasPrefix(typ, "Interval"):
		return parseInt(v)
	case strings.HasPrefix(typ, "Float"), strings.HasPrefix(typ, "Decimal"):
		return parseFloat(v)
	case strings.HasPrefix(typ, "DateTime"), typ == "Date", typ == "Date32":
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("want a time string for %s, got %T", typ, v)
		}
		loc, err := typeLocation(typ)
		if err != nil {
			return nil, err
		}
		return parseTime(s, loc)
	}
	if n, ok := v.(json.Number); ok {
		return n.String(), nil
	}
	return v, nil
}

func parseUint(v any) (any, error) {
	switch x := v.(type) {
	case json.Number:
		return strconv.ParseUint(x.String(), 10, 64)
	case string:
		return strconv.ParseUint(x, 10, 64)
	}
	return nil, fmt.Errorf("want an unsigned integer, got %T", v)
}

func parseInt(v any) (any, error) {
	switch x := v.(type) {
	case json.Number:
		return strconv.ParseInt(x.String(), 10, 64)
	case string:
		return strconv.ParseInt(x, 10, 64)
	}
	return nil, fmt.Errorf("want an integer, got %T", v)
}

func parseFloat(v any) (any, error) {
	var s string
	switch x := v.(type) {
	case json.Number:
		s = x.String()
	case string:
		s = x
	default:
		return nil, fmt.Errorf("want a number, got %T", v)
	}
	switch s {
	case "nan", "-nan":
		return math.NaN(), nil
	case "inf", "+inf":
		return math.Inf(1), nil
	case "-inf":
		return math.Inf(-1), nil
	}
	return strconv.ParseFloat(s, 64)
}

// parseTime reads a time written in loc's wall clock, returning it in UTC.
func parseTime(s string, loc *time.Location) (time.Time, error) {
	for _, layout := range []string{"2006-01-02 15:04:05.999999999", "2006-01-02 15:04:05", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("cannot parse time %q", s)
}

// locations caches the time zones DateTime types name.
var locations sync.Map // name → *time.Location

// typeLocation is the time zone whose wall clock ClickHouse writes a DateTime or
// DateTime64 value of type typ in: the one the type names (DateTime('Asia/Tokyo'),
// DateTime64(3, 'UTC')), else UTC, the session time zone both backends set.
func typeLocation(typ string) (*time.Location, error) {
	i := strings.IndexByte(typ, '\'')
	if i < 0 {
		return time.UTC, nil
	}
	name := strings.TrimSuffix(typ[i+1:], "')")
	if loc, ok := locations.Load(name); ok {
		return loc.(*time.Location), nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("time zone of %s: %w", typ, err)
	}
	locations.Store(name, loc)
	return loc, nil
}
