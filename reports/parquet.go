package reports

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/gpupool/gpupool/store"
)

// FormatParquet is Apache Parquet, for finance tools and data lakes.
const FormatParquet = "parquet"

// parquetKind is how a ClickHouse type is written to Parquet.
type parquetKind int

const (
	pqString parquetKind = iota
	pqInt
	pqUint
	pqFloat
	pqBool
	pqTime
)

func parquetKindOf(typ string) parquetKind {
	t := store.BaseType(typ)
	switch {
	case strings.HasPrefix(t, "UInt") && !strings.HasPrefix(t, "UInt128") && !strings.HasPrefix(t, "UInt256"):
		return pqUint
	case strings.HasPrefix(t, "Int") && !strings.HasPrefix(t, "Int128") && !strings.HasPrefix(t, "Int256") && !strings.HasPrefix(t, "Interval"):
		return pqInt
	case strings.HasPrefix(t, "Float"), strings.HasPrefix(t, "Decimal"):
		return pqFloat
	case t == "Bool":
		return pqBool
	case strings.HasPrefix(t, "DateTime"), t == "Date", t == "Date32":
		return pqTime
	}
	return pqString // strings, UUIDs, enums; arrays, maps and tuples as JSON text
}

func parquetNode(k parquetKind) parquet.Node {
	switch k {
	case pqInt:
		return parquet.Int(64)
	case pqUint:
		return parquet.Uint(64)
	case pqFloat:
		return parquet.Leaf(parquet.DoubleType)
	case pqBool:
		return parquet.Leaf(parquet.BooleanType)
	case pqTime:
		return parquet.Timestamp(parquet.Millisecond)
	}
	return parquet.String()
}

// WriteParquet writes res as a Parquet file: one optional column per result column
// (NULL stays NULL), integers as INT64/UINT64, floats as DOUBLE, times as
// millisecond timestamps (UTC), arrays and maps as JSON text.
func WriteParquet(w io.Writer, res *store.Result) error {
	group := parquet.Group{}
	kinds := make([]parquetKind, len(res.Columns))
	for i, c := range res.Columns {
		if _, dup := group[c.Name]; dup {
			return fmt.Errorf("reports: parquet: column name %q appears twice (alias one of them)", c.Name)
		}
		kinds[i] = parquetKindOf(c.Type)
		group[c.Name] = parquet.Optional(parquetNode(kinds[i]))
	}
	schema := parquet.NewSchema("gpupool", group)
	leaf := make([]int, len(res.Columns))
	for i, c := range res.Columns {
		l, ok := schema.Lookup(c.Name)
		if !ok {
			return fmt.Errorf("reports: parquet: column %q missing from its own schema", c.Name)
		}
		leaf[i] = l.ColumnIndex
	}
	pw := parquet.NewWriter(w, schema)
	rows := make([]parquet.Row, 0, len(res.Rows))
	for _, r := range res.Rows {
		row := make(parquet.Row, len(schema.Columns()))
		for i, v := range r {
			pv, err := parquetValue(kinds[i], v)
			if err != nil {
				return fmt.Errorf("reports: parquet: column %s: %w", res.Columns[i].Name, err)
			}
			if pv.IsNull() {
				row[leaf[i]] = parquet.NullValue().Level(0, 0, leaf[i])
			} else {
				row[leaf[i]] = pv.Level(0, 1, leaf[i])
			}
		}
		rows = append(rows, row)
	}
	if _, err := pw.WriteRows(rows); err != nil {
		return fmt.Errorf("reports: parquet: %w", err)
	}
	if err := pw.Close(); err != nil {
		return fmt.Errorf("reports: parquet: %w", err)
	}
	return nil
}

func parquetValue(k parquetKind, v any) (parquet.Value, error) {
	if v == nil {
		return parquet.NullValue(), nil
	}
	switch k {
	case pqInt:
		if x, ok := v.(int64); ok {
			return parquet.Int64Value(x), nil
		}
	case pqUint:
		if x, ok := v.(uint64); ok {
			return parquet.Int64Value(int64(x)), nil
		}
	case pqFloat:
		if x, ok := v.(float64); ok {
			return parquet.DoubleValue(x), nil
		}
	case pqBool:
		if x, ok := v.(bool); ok {
			return parquet.BooleanValue(x), nil
		}
	case pqTime:
		if x, ok := v.(time.Time); ok {
			return parquet.Int64Value(x.UTC().UnixMilli()), nil
		}
	default:
		if x, ok := v.(string); ok {
			return parquet.ByteArrayValue([]byte(x)), nil
		}
		b, err := json.Marshal(jsonValue(v))
		if err != nil {
			return parquet.Value{}, err
		}
		return parquet.ByteArrayValue(b), nil
	}
	return parquet.Value{}, fmt.Errorf("value %v is %T, not what its type promises", v, v)
}
