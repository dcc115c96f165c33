package store

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"time"
)

// Column is one column of a Block: a name, the ClickHouse type its values are sent
// as, and the values.
type Column interface {
	// Name is the table column the values go to.
	Name() string
	// Type is the ClickHouse type of the values as sent; ClickHouse converts them to
	// the table's type (String to LowCardinality(String), for example).
	Type() string
	// Len is the number of values.
	Len() int
	// Reset drops the values, keeping capacity.
	Reset()
	// AppendNative appends the values in ClickHouse Native format.
	AppendNative(dst []byte) []byte
	// Values returns the values as the Go slice clickhouse-go's batch column
	// Append takes for this type.
	Values() any
}

// Block is a set of columns of equal length, inserted together.
type Block struct {
	Columns []Column
}

// NewBlock returns a block of the given columns.
func NewBlock(cols ...Column) *Block { return &Block{Columns: cols} }

// Rows returns the number of rows, or -1 if the columns disagree.
func (b *Block) Rows() int {
	if len(b.Columns) == 0 {
		return 0
	}
	n := b.Columns[0].Len()
	for _, c := range b.Columns[1:] {
		if c.Len() != n {
			return -1
		}
	}
	return n
}

// Reset empties every column.
func (b *Block) Reset() {
	for _, c := range b.Columns {
		c.Reset()
	}
}

// Check returns an error unless the block has columns of equal length.
func (b *Block) Check() error {
	if len(b.Columns) == 0 {
		return fmt.Errorf("%w: no columns", ErrBadBlock)
	}
	n := b.Columns[0].Len()
	for _, c := range b.Columns {
		if c.Len() != n {
			return fmt.Errorf("%w: column %s has %d rows, column %s has %d", ErrBadBlock, c.Name(), c.Len(), b.Columns[0].Name(), n)
		}
	}
	return nil
}

// ColumnNames returns the columns' names in order.
func (b *Block) ColumnNames() []string {
	names := make([]string, len(b.Columns))
	for i, c := range b.Columns {
		names[i] = c.Name()
	}
	return names
}

// AppendNative appends the block in ClickHouse's Native format (as written by
// clickhouse-local for FORMAT Native: column and row counts, then each column's name,
// type and data).
func (b *Block) AppendNative(dst []byte) ([]byte, error) {
	if err := b.Check(); err != nil {
		return dst, err
	}
	dst = binary.AppendUvarint(dst, uint64(len(b.Columns)))
	dst = binary.AppendUvarint(dst, uint64(b.Rows()))
	for _, c := range b.Columns {
		dst = appendString(dst, c.Name())
		dst = appendString(dst, c.Type())
		dst = c.AppendNative(dst)
	}
	return dst, nil
}

// WriteNative writes the block in ClickHouse's Native format a column at a time:
// the header, then each column encoded into buf (reused, grown as needed), each
// handed to emit before the next is encoded. Fixed-width columns hand emit their
// own memory after their header, with no copy. emit must not keep the slice. It
// returns buf for reuse; a block's encoding needs at most its largest
// variable-width column in memory instead of the whole block.
func (b *Block) WriteNative(buf []byte, emit func([]byte) error) ([]byte, error) {
	if err := b.Check(); err != nil {
		return buf, err
	}
	buf = binary.AppendUvarint(buf[:0], uint64(len(b.Columns)))
	buf = binary.AppendUvarint(buf, uint64(b.Rows()))
	for _, c := range b.Columns {
		buf = appendString(buf, c.Name())
		buf = appendString(buf, c.Type())
		var err error
		if s, ok := c.(nativeStreamer); ok {
			buf, err = s.streamNative(buf, emit)
		} else {
			buf = c.AppendNative(buf)
			err = emit(buf)
		}
		if err != nil {
			return buf, err
		}
		buf = buf[:0]
	}
	return buf, nil
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// col is a column of Go values of type T.
type col[T any] struct {
	name, typ string
	Data      []T
	enc       func(dst []byte, v T) []byte
	// raw, for fixed-width numbers, is Data's memory, which is its Native
	// encoding on a little-endian machine.
	raw func([]T) []byte
}

func (c *col[T]) Name() string  { return c.name }
func (c *col[T]) Type() string  { return c.typ }
func (c *col[T]) Len() int      { return len(c.Data) }
func (c *col[T]) Reset()        { c.Data = c.Data[:0] }
func (c *col[T]) Values() any   { return c.Data }
func (c *col[T]) Append(v ...T) { c.Data = append(c.Data, v...) }
func (c *col[T]) AppendNative(dst []byte) []byte {
	for _, v := range c.Data {
		dst = c.enc(dst, v)
	}
	return dst
}

// UInt8Col is a UInt8 column (0/1 flags among them).
type UInt8Col = col[uint8]

// UInt16Col is a UInt16 column.
type UInt16Col = col[uint16]

// UInt32Col is a UInt32 column.
type UInt32Col = col[uint32]

// UInt64Col is a UInt64 column.
type UInt64Col = col[uint64]

// Int32Col is an Int32 column.
type Int32Col = col[int32]

// Float32Col is a Float32 column.
type Float32Col = col[float32]

// Float64Col is a Float64 column.
type Float64Col = col[float64]

// StringCol is a String column (sent as String whatever the table's type).
type StringCol = col[string]

// NewUInt8 returns an empty UInt8 column.
func NewUInt8(name string) *UInt8Col {
	return &UInt8Col{name: name, typ: "UInt8", enc: func(d []byte, v uint8) []byte { return append(d, v) }, raw: rawBytes[uint8]}
}

// NewUInt16 returns an empty UInt16 column.
func NewUInt16(name string) *UInt16Col {
	return &UInt16Col{name: name, typ: "UInt16", enc: func(d []byte, v uint16) []byte { return binary.LittleEndian.AppendUint16(d, v) }, raw: rawBytes[uint16]}
}

// NewUInt32 returns an empty UInt32 column.
func NewUInt32(name string) *UInt32Col {
	return &UInt32Col{name: name, typ: "UInt32", enc: func(d []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(d, v) }, raw: rawBytes[uint32]}
}

// NewUInt64 returns an empty UInt64 column.
func NewUInt64(name string) *UInt64Col {
	return &UInt64Col{name: name, typ: "UInt64", enc: func(d []byte, v uint64) []byte { return binary.LittleEndian.AppendUint64(d, v) }, raw: rawBytes[uint64]}
}

// NewInt32 returns an empty Int32 column.
func NewInt32(name string) *Int32Col {
	return &Int32Col{name: name, typ: "Int32", enc: func(d []byte, v int32) []byte { return binary.LittleEndian.AppendUint32(d, uint32(v)) }, raw: rawBytes[int32]}
}

// NewFloat32 returns an empty Float32 column.
func NewFloat32(name string) *Float32Col {
	return &Float32Col{name: name, typ: "Float32", enc: func(d []byte, v float32) []byte {
		return binary.LittleEndian.AppendUint32(d, math.Float32bits(v))
	}, raw: rawBytes[float32]}
}

// NewFloat64 returns an empty Float64 column.
func NewFloat64(name string) *Float64Col {
	return &Float64Col{name: name, typ: "Float64", enc: func(d []byte, v float64) []byte {
		return binary.LittleEndian.AppendUint64(d, math.Float64bits(v))
	}, raw: rawBytes[float64]}
}

// NewString returns an empty String column.
func NewString(name string) *StringCol {
	return &StringCol{name: name, typ: "String", enc: appendString}
}

// The array, map, nullable and time columns below encode column-wise (offsets or a
// null map first, then the values), so they override AppendNative.

// DateTimeCol is a DateTime('UTC') column of whole seconds since the epoch.
type DateTimeCol struct {
	name string
	Data []uint32
}

// NewDateTime returns an empty DateTime('UTC') column.
func NewDateTime(name string) *DateTimeCol { return &DateTimeCol{name: name} }

func (c *DateTimeCol) Name() string       { return c.name }
func (c *DateTimeCol) Type() string       { return "DateTime('UTC')" }
func (c *DateTimeCol) Len() int           { return len(c.Data) }
func (c *DateTimeCol) Reset()             { c.Data = c.Data[:0] }
func (c *DateTimeCol) Append(secs uint32) { c.Data = append(c.Data, secs) }
func (c *DateTimeCol) AppendNative(dst []byte) []byte {
	for _, v := range c.Data {
		dst = binary.LittleEndian.AppendUint32(dst, v)
	}
	return dst
}

// Values returns []time.Time, which clickhouse-go takes for DateTime.
func (c *DateTimeCol) Values() any {
	out := make([]time.Time, len(c.Data))
	for i, v := range c.Data {
		out[i] = time.Unix(int64(v), 0).UTC()
	}
	return out
}

// DateTime64MsCol is a DateTime64(3, 'UTC') column of milliseconds since the epoch.
type DateTime64MsCol struct {
	name string
	Data []int64
}

// NewDateTime64Ms returns an empty DateTime64(3) column.
func NewDateTime64Ms(name string) *DateTime64MsCol { return &DateTime64MsCol{name: name} }

func (c *DateTime64MsCol) Name() string    { return c.name }
func (c *DateTime64MsCol) Type() string    { return "DateTime64(3, 'UTC')" }
func (c *DateTime64MsCol) Len() int        { return len(c.Data) }
func (c *DateTime64MsCol) Reset()          { c.Data = c.Data[:0] }
func (c *DateTime64MsCol) Append(ms int64) { c.Data = append(c.Data, ms) }
func (c *DateTime64MsCol) AppendNative(dst []byte) []byte {
	for _, v := range c.Data {
		dst = binary.LittleEndian.AppendUint64(dst, uint64(v))
	}
	return dst
}

// Values returns []time.Time, which clickhouse-go takes for DateTime64.
func (c *DateTime64MsCol) Values() any {
	out := make([]time.Time, len(c.Data))
	for i, v := range c.Data {
		out[i] = time.UnixMilli(v).UTC()
	}
	return out
}

// NullableFloat32Col is a Nullable(Float32) column; NaN is sent as NULL.
type NullableFloat32Col struct {
	name string
	Data []float32
}

// NewNullableFloat32 returns an empty Nullable(Float32) column.
func NewNullableFloat32(name string) *NullableFloat32Col { return &NullableFloat32Col{name: name} }

func (c *NullableFloat32Col) Name() string     { return c.name }
func (c *NullableFloat32Col) Type() string     { return "Nullable(Float32)" }
func (c *NullableFloat32Col) Len() int         { return len(c.Data) }
func (c *NullableFloat32Col) Reset()           { c.Data = c.Data[:0] }
func (c *NullableFloat32Col) Append(v float32) { c.Data = append(c.Data, v) }
func (c *NullableFloat32Col) AppendNative(dst []byte) []byte {
	for _, v := range c.Data {
		if v != v {
			dst = append(dst, 1)
		} else {
			dst = append(dst, 0)
		}
	}
	for _, v := range c.Data {
		if v != v {
			v = 0
		}
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(v))
	}
	return dst
}

// Values returns []*float32 with nil for NaN, which clickhouse-go takes for
// Nullable(Float32).
func (c *NullableFloat32Col) Values() any {
	out := make([]*float32, len(c.Data))
	for i := range c.Data {
		if v := c.Data[i]; v == v {
			out[i] = &c.Data[i]
		}
	}
	return out
}

// StringArrayCol is an Array(String) column.
type StringArrayCol struct {
	name string
	Data [][]string
}

// NewStringArray returns an empty Array(String) column.
func NewStringArray(name string) *StringArrayCol { return &StringArrayCol{name: name} }

func (c *StringArrayCol) Name() string      { return c.name }
func (c *StringArrayCol) Type() string      { return "Array(String)" }
func (c *StringArrayCol) Len() int          { return len(c.Data) }
func (c *StringArrayCol) Reset()            { c.Data = c.Data[:0] }
func (c *StringArrayCol) Append(a []string) { c.Data = append(c.Data, a) }
func (c *StringArrayCol) Values() any       { return c.Data }
func (c *StringArrayCol) AppendNative(dst []byte) []byte {
	// Array(T): cumulative end offsets (UInt64), then every element.
	off := uint64(0)
	for _, a := range c.Data {
		off += uint64(len(a))
		dst = binary.LittleEndian.AppendUint64(dst, off)
	}
	for _, a := range c.Data {
		for _, s := range a {
			dst = appendString(dst, s)
		}
	}
	return dst
}

// StringMapCol is a Map(String, String) column.
type StringMapCol struct {
	name string
	Data []map[string]string
}

// NewStringMap returns an empty Map(String, String) column.
func NewStringMap(name string) *StringMapCol { return &StringMapCol{name: name} }

func (c *StringMapCol) Name() string               { return c.name }
func (c *StringMapCol) Type() string               { return "Map(String, String)" }
func (c *StringMapCol) Len() int                   { return len(c.Data) }
func (c *StringMapCol) Reset()                     { c.Data = c.Data[:0] }
func (c *StringMapCol) Append(m map[string]string) { c.Data = append(c.Data, m) }
func (c *StringMapCol) Values() any                { return c.Data }
func (c *StringMapCol) AppendNative(dst []byte) []byte {
	// Map(K, V) is Array(Tuple(K, V)): offsets, then all keys, then all values.
	// Keys are sorted so equal maps encode to equal bytes (deduplication hashes them).
	keys := make([][]string, len(c.Data))
	off := uint64(0)
	for i, m := range c.Data {
		ks := make([]string, 0, len(m))
		for k := range m {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		keys[i] = ks
		off += uint64(len(ks))
		dst = binary.LittleEndian.AppendUint64(dst, off)
	}
	for _, ks := range keys {
		for _, k := range ks {
			dst = appendString(dst, k)
		}
	}
	for i, ks := range keys {
		for _, k := range ks {
			dst = appendString(dst, c.Data[i][k])
		}
	}
	return dst
}

// LowCardinalityStringCol is a LowCardinality(String) column sent with its
// dictionary, so the server does not hash every value again: ClickHouse's Native
// form of LowCardinality (shared dictionary with additional keys, version 1).
type LowCardinalityStringCol struct {
	name string
	dict map[string]uint32
	keys []string // dictionary, in index order
	// idx is one index into keys per row, w bytes each, little-endian: 1 while the
	// dictionary has at most 256 keys, then 2 up to 65,536, then 4. Native takes
	// any of the three widths, so the indexes are written as one copy, and most
	// of a batch's columns (a few dozen distinct values each) hold a byte a row,
	// not four. The width stays across Reset: the next batch's dictionary is
	// mostly as large, and widening again would allocate again.
	idx []byte
	w   int
	// remap is AppendRefs' scratch: message dictionary index → keys index.
	remap []int32
}

// NewLowCardinalityString returns an empty LowCardinality(String) column.
func NewLowCardinalityString(name string) *LowCardinalityStringCol {
	return &LowCardinalityStringCol{name: name, dict: map[string]uint32{}, w: 1}
}

func (c *LowCardinalityStringCol) Name() string { return c.name }
func (c *LowCardinalityStringCol) Type() string { return "LowCardinality(String)" }
func (c *LowCardinalityStringCol) Len() int     { return len(c.idx) / c.w }

// Reset drops the rows and the dictionary; the index width stays.
func (c *LowCardinalityStringCol) Reset() {
	c.idx = c.idx[:0]
	c.keys = c.keys[:0]
	clear(c.dict)
}

// Append adds a value.
func (c *LowCardinalityStringCol) Append(s string) {
	i, ok := c.dict[s]
	if !ok {
		i = uint32(len(c.keys))
		if c.w < 4 && i == 1<<(8*c.w) {
			c.widen()
		}
		c.dict[s] = i
		c.keys = append(c.keys, s)
	}
	c.appendIdx(i)
}

func (c *LowCardinalityStringCol) appendIdx(i uint32) {
	switch c.w {
	case 1:
		c.idx = append(c.idx, byte(i))
	case 2:
		c.idx = binary.LittleEndian.AppendUint16(c.idx, uint16(i))
	default:
		c.idx = binary.LittleEndian.AppendUint32(c.idx, i)
	}
}

// at is row r's index into keys.
func (c *LowCardinalityStringCol) at(r int) uint32 {
	switch c.w {
	case 1:
		return uint32(c.idx[r])
	case 2:
		return uint32(binary.LittleEndian.Uint16(c.idx[2*r:]))
	default:
		return binary.LittleEndian.Uint32(c.idx[4*r:])
	}
}

// IndexAt is row r's index into the column's dictionary: rows with equal values
// have equal indexes (until Reset).
func (c *LowCardinalityStringCol) IndexAt(r int) uint32 { return c.at(r) }

// KeyAt is row r's value.
func (c *LowCardinalityStringCol) KeyAt(r int) string { return c.keys[c.at(r)] }

// widen rewrites the indexes one width up, keeping the room for as many rows:
// the dictionary outgrew this width.
func (c *LowCardinalityStringCol) widen() {
	n, w := c.Len(), 2*c.w
	out := make([]byte, 0, max(cap(c.idx)/c.w, 2*n, 1024)*w)
	for r := range n {
		if w == 2 {
			out = binary.LittleEndian.AppendUint16(out, uint16(c.at(r)))
		} else {
			out = binary.LittleEndian.AppendUint32(out, c.at(r))
		}
	}
	c.idx, c.w = out, w
}

// Values returns the values as []string, which clickhouse-go takes for
// LowCardinality(String).
func (c *LowCardinalityStringCol) Values() any {
	out := make([]string, c.Len())
	for r := range out {
		out[r] = c.keys[c.at(r)]
	}
	return out
}

// Low-cardinality serialization constants (ClickHouse SerializationLowCardinality).
const (
	lcSharedDictionariesWithAdditionalKeys = 1
	lcHasAdditionalKeys                    = 1 << 9
	lcNeedUpdateDictionary                 = 1 << 10
	lcKeyUInt8, lcKeyUInt16, lcKeyUInt32   = 0, 1, 2
)

// AppendNative writes the state prefix (key serialization version), then one
// granule: flags and index width, the dictionary, and the per-row indexes.
func (c *LowCardinalityStringCol) AppendNative(dst []byte) []byte {
	dst = c.appendNativeHeader(dst)
	return append(dst, c.idx...)
}

// appendNativeHeader appends everything of the column's Native encoding before
// the indexes.
func (c *LowCardinalityStringCol) appendNativeHeader(dst []byte) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, lcSharedDictionariesWithAdditionalKeys)
	if len(c.idx) == 0 {
		return dst
	}
	width := uint64(lcKeyUInt8)
	switch c.w {
	case 2:
		width = lcKeyUInt16
	case 4:
		width = lcKeyUInt32
	}
	dst = binary.LittleEndian.AppendUint64(dst, lcHasAdditionalKeys|lcNeedUpdateDictionary|width)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(len(c.keys)))
	for _, k := range c.keys {
		dst = appendString(dst, k)
	}
	return binary.LittleEndian.AppendUint64(dst, uint64(c.Len()))
}

// Bulk appends, for ingest's columnar path.

// AppendN appends v n times.
func (c *col[T]) AppendN(v T, n int) {
	for i := 0; i < n; i++ {
		c.Data = append(c.Data, v)
	}
}

// AppendOr appends vs, or def len times when vs is empty (a column the writer did
// not send).
func (c *col[T]) AppendOr(vs []T, def T, n int) {
	if len(vs) == 0 {
		c.AppendN(def, n)
		return
	}
	c.Data = append(c.Data, vs...)
}

// AppendDeltas appends times given as a first value and deltas to the previous one.
func (c *DateTime64MsCol) AppendDeltas(deltas []int64) {
	ts := int64(0)
	for _, d := range deltas {
		ts += d
		c.Data = append(c.Data, ts)
	}
}

// AppendOr appends vs, or n NULLs when vs is empty.
func (c *NullableFloat32Col) AppendOr(vs []float32, n int) {
	if len(vs) == 0 {
		nan := float32(math.NaN())
		for i := 0; i < n; i++ {
			c.Data = append(c.Data, nan)
		}
		return
	}
	c.Data = append(c.Data, vs...)
}

// AppendN appends s n times.
func (c *LowCardinalityStringCol) AppendN(s string, n int) {
	c.Append(s)
	i := c.at(c.Len() - 1)
	for k := 1; k < n; k++ {
		c.appendIdx(i)
	}
}

// AppendRefs appends dict[r] for each r of refs (n empty strings when refs is
// empty), looking each distinct reference up once: a message's rows repeat a few
// strings many times.
func (c *LowCardinalityStringCol) AppendRefs(refs []uint32, dict []string, n int) {
	if len(refs) == 0 {
		c.AppendN("", n)
		return
	}
	if cap(c.remap) < len(dict) {
		c.remap = make([]int32, len(dict))
	}
	remap := c.remap[:len(dict)]
	for i := range remap {
		remap[i] = -1
	}
	for _, r := range refs {
		k := remap[r]
		if k < 0 {
			c.Append(dict[r])
			k = int32(c.at(c.Len() - 1))
			remap[r] = k
			continue
		}
		c.appendIdx(uint32(k))
	}
}
