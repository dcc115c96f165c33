package clickhouse

import (
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/column"

	"github.com/gpupool/gpupool/store"
)

// insertSettings are the per-insert settings. A token makes ClickHouse drop an
// insert whose token it has seen (within the table's deduplication window), in the
// table and in the materialized views fed from it; values are sent as settings,
// never as SQL text, so a token needs no quoting.
//
// On a cluster the insert goes to a Distributed table; distributed_foreground_insert
// makes it return only after every shard has stored its rows, so ingest never acks
// rows that sit in a local forwarding queue.
func insertSettings(token string, async, cluster bool) map[string]any {
	s := map[string]any{}
	if cluster {
		s["distributed_foreground_insert"] = 1
	}
	if token != "" {
		s["insert_deduplicate"] = 1
		s["insert_deduplication_token"] = token
		s["deduplicate_blocks_in_dependent_materialized_views"] = 1
	}
	if async {
		s["async_insert"] = 1
		s["wait_for_async_insert"] = 1
		if token != "" {
			s["async_insert_deduplicate"] = 1
		}
	}
	return s
}

// columnValues returns the Go slice to append to a clickhouse-go batch column of
// ClickHouse type target for c. Mostly that is c.Values(), which clickhouse-go takes
// for the column's own type (and for LowCardinality and Nullable of it). Two
// columns need more:
//
//   - Map(String, String): a Go map iterates in random order, and ClickHouse's
//     data-hash deduplication (an insert without a token) hashes the bytes, so keys
//     are sent sorted, as the embedded store's Native encoding sends them.
//   - a table column wider than the block's (UInt32 into UInt64, Float32 into
//     Float64): the embedded store's server converts; clickhouse-go does not, so
//     the values are widened here to the types store.NumericWidens allows.
//     Insert has refused narrowing first (store.CheckInsertType).
func columnValues(c store.Column, target string) (any, error) {
	return rowValues(c, target, 0, c.Len())
}

// rowValues is columnValues for rows [from, to) of c: Insert hands clickhouse-go
// a block a slice of rows at a time. Fixed-width columns are sub-slices of the
// block's own memory, not copies.
func rowValues(c store.Column, target string, from, to int) (any, error) {
	base := store.BaseType(target)
	switch c := c.(type) {
	case *store.StringMapCol:
		out := make([]column.IterableOrderedMap, to-from)
		for i, m := range c.Data[from:to] {
			out[i] = newSortedMap(m)
		}
		return out, nil
	case *store.UInt8Col:
		return widen(c.Data[from:to], "UInt8", base)
	case *store.UInt16Col:
		return widen(c.Data[from:to], "UInt16", base)
	case *store.UInt32Col:
		return widen(c.Data[from:to], "UInt32", base)
	case *store.Int32Col:
		return widen(c.Data[from:to], "Int32", base)
	case *store.Float32Col:
		return widen(c.Data[from:to], "Float32", base)
	case *store.UInt64Col:
		return c.Data[from:to], nil
	case *store.Float64Col:
		return c.Data[from:to], nil
	case *store.StringCol:
		return c.Data[from:to], nil
	case *store.StringArrayCol:
		return c.Data[from:to], nil
	case *store.DateTimeCol:
		out := make([]time.Time, to-from)
		for i, v := range c.Data[from:to] {
			out[i] = time.Unix(int64(v), 0).UTC()
		}
		return out, nil
	case *store.DateTime64MsCol:
		out := make([]time.Time, to-from)
		for i, v := range c.Data[from:to] {
			out[i] = time.UnixMilli(v).UTC()
		}
		return out, nil
	case *store.NullableFloat32Col:
		return nullableValues(c.Data[from:to], base), nil
	case *store.LowCardinalityStringCol:
		out := make([]string, to-from)
		for i := range out {
			out[i] = c.KeyAt(from + i)
		}
		return out, nil
	}
	// A column type added to store later: its whole Values, sliced.
	return reflect.ValueOf(c.Values()).Slice(from, to).Interface(), nil
}

// nullableValues returns data as []*float32, or []*float64 for a Float64 table
// column, nil for NaN, which clickhouse-go takes for Nullable.
func nullableValues(data []float32, base string) any {
	if base == "Float64" {
		out := make([]*float64, len(data))
		for i, v := range data {
			if v == v {
				f := float64(v)
				out[i] = &f
			}
		}
		return out
	}
	out := make([]*float32, len(data))
	for i := range data {
		if v := data[i]; v == v {
			out[i] = &data[i]
		}
	}
	return out
}

type number interface {
	~uint8 | ~uint16 | ~uint32 | ~int32 | ~float32
}

// widen returns data (of ClickHouse type from) unchanged, or converted to base
// when store.NumericWidens allows it.
func widen[T number](data []T, from, base string) (any, error) {
	if base == from || !store.NumericWidens(from, base) {
		return data, nil
	}
	switch base {
	case "UInt16":
		return convert[T, uint16](data), nil
	case "UInt32":
		return convert[T, uint32](data), nil
	case "UInt64":
		return convert[T, uint64](data), nil
	case "Int16":
		return convert[T, int16](data), nil
	case "Int32":
		return convert[T, int32](data), nil
	case "Int64":
		return convert[T, int64](data), nil
	case "Float32":
		return convert[T, float32](data), nil
	case "Float64":
		return convert[T, float64](data), nil
	}
	return nil, fmt.Errorf("no conversion to %s", base)
}

func convert[T number, U uint16 | uint32 | uint64 | int16 | int32 | int64 | float32 | float64](data []T) []U {
	out := make([]U, len(data))
	for i, v := range data {
		out[i] = U(v)
	}
	return out
}

// sortedMap is a map[string]string that clickhouse-go's Map column reads in key
// order (it implements column.IterableOrderedMap).
type sortedMap struct {
	keys []string
	m    map[string]string
}

var _ column.IterableOrderedMap = (*sortedMap)(nil)

// newSortedMap copies m, so the block's own maps are never changed.
func newSortedMap(m map[string]string) *sortedMap {
	s := &sortedMap{keys: make([]string, 0, len(m)), m: make(map[string]string, len(m))}
	for k, v := range m {
		s.keys = append(s.keys, k)
		s.m[k] = v
	}
	slices.Sort(s.keys)
	return s
}

// Put adds or replaces a key; the interface requires it, though Insert only reads.
func (s *sortedMap) Put(k, v any) {
	key, val := fmt.Sprint(k), fmt.Sprint(v)
	if _, ok := s.m[key]; !ok {
		s.keys = append(s.keys, key)
		slices.Sort(s.keys)
	}
	s.m[key] = val
}

func (s *sortedMap) Iterator() column.MapIterator { return &sortedMapIter{s: s, i: -1} }

type sortedMapIter struct {
	s *sortedMap
	i int
}

func (it *sortedMapIter) Next() bool { it.i++; return it.i < len(it.s.keys) }
func (it *sortedMapIter) Key() any   { return it.s.keys[it.i] }
func (it *sortedMapIter) Value() any { return it.s.m[it.s.keys[it.i]] }
