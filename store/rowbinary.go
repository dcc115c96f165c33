package store

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"time"
)

// RowBinaryFormat is the output format ParseRowBinary reads.
const RowBinaryFormat = "RowBinaryWithNamesAndTypes"

// ParseRowBinary reads ClickHouse's RowBinaryWithNamesAndTypes output into a
// Result with the values ParseJSONCompact gives for the same query (so code
// reading a Result cannot tell them apart), with one difference: a
// SimpleAggregateFunction(f, T) column holds T's values, as on the clickhouse-go
// backend, where the JSON form has their text. It reads the values as they are
// stored, with no text in between: DateTime and Decimal without parsing,
// LowCardinality strings kept once per distinct value.
//
// A column of a type it does not read is ErrUnsupportedType before any row is
// read (the caller asks again in JSONCompact); output cut short or malformed is
// an error naming the row and column.
func ParseRowBinary(data []byte) (*Result, error) {
	if len(data) == 0 { // a statement with no output
		return &Result{}, nil
	}
	d := &binReader{b: data}
	n := d.uvarint()
	if d.err != nil || n > uint64(len(data)) {
		return nil, fmt.Errorf("store: RowBinary header: column count: %w", errTruncated)
	}
	res := &Result{Columns: make([]ColumnMeta, n)}
	for i := range res.Columns {
		res.Columns[i].Name = d.str(false)
	}
	for i := range res.Columns {
		res.Columns[i].Type = d.str(false)
	}
	if d.err != nil {
		return nil, fmt.Errorf("store: RowBinary header: %w", d.err)
	}
	types := make([]*binType, n)
	for i, c := range res.Columns {
		t, err := parseBinType(c.Type)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", c.Name, err)
		}
		types[i] = t
	}
	if n == 0 {
		if d.off != len(data) {
			return nil, fmt.Errorf("store: RowBinary: %d bytes after a header of no columns", len(data)-d.off)
		}
		return res, nil
	}
	return res, d.rows(res, types)
}

// rows reads the rows after the header into res, their cells in shared
// arrays of rowsPerChunk rows.
func (d *binReader) rows(res *Result, types []*binType) error {
	const rowsPerChunk = 256
	var chunk []any
	for row := 0; d.off < len(d.b); row++ {
		if len(chunk)+len(types) > cap(chunk) {
			chunk = make([]any, 0, rowsPerChunk*len(types))
		}
		start := len(chunk)
		for i, t := range types {
			v := d.value(t)
			if d.err != nil {
				return fmt.Errorf("store: RowBinary row %d, column %s (%s): %w", row+1, res.Columns[i].Name, res.Columns[i].Type, d.err)
			}
			chunk = append(chunk, v)
		}
		res.Rows = append(res.Rows, chunk[start:len(chunk):len(chunk)])
	}
	return nil
}

var errTruncated = fmt.Errorf("output cut short")

// binReader reads values off b; the first error stops it.
type binReader struct {
	b      []byte
	off    int
	err    error
	intern map[string]string
}

func (d *binReader) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b)-d.off {
		d.err = errTruncated
		return nil
	}
	p := d.b[d.off : d.off+n]
	d.off += n
	return p
}

func (d *binReader) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.err = errTruncated
		return 0
	}
	d.off += n
	return v
}

// length is a count of values that follow, each at least one byte.
func (d *binReader) length() int {
	n := d.uvarint()
	if d.err != nil {
		return 0
	}
	if n > uint64(len(d.b)-d.off) {
		d.err = fmt.Errorf("a length of %d with %d bytes left", n, len(d.b)-d.off)
		return 0
	}
	return int(n)
}

func (d *binReader) str(intern bool) string {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		n = uint64(len(d.b)) + 1 // past the output, without int overflow: take refuses it
	}
	p := d.take(int(n))
	if !intern || d.err != nil {
		return string(p)
	}
	if s, ok := d.intern[string(p)]; ok {
		return s
	}
	if d.intern == nil {
		d.intern = map[string]string{}
	}
	s := string(p)
	d.intern[s] = s
	return s
}

func (d *binReader) fixed(size int) uint64 {
	p := d.take(size)
	if p == nil {
		return 0
	}
	switch size {
	case 1:
		return uint64(p[0])
	case 2:
		return uint64(binary.LittleEndian.Uint16(p))
	case 4:
		return uint64(binary.LittleEndian.Uint32(p))
	}
	return binary.LittleEndian.Uint64(p)
}

// signed sign-extends a size-byte value.
func signed(u uint64, size int) int64 {
	shift := 64 - 8*size
	return int64(u<<shift) >> shift
}

func (d *binReader) value(t *binType) any {
	switch t.kind {
	case binUint:
		return d.fixed(t.size)
	case binInt:
		return signed(d.fixed(t.size), t.size)
	case binFloat32:
		return Float32To64(math.Float32frombits(uint32(d.fixed(4))))
	case binFloat64:
		return math.Float64frombits(d.fixed(8))
	case binBool:
		return d.fixed(1) != 0
	case binString:
		return d.str(t.intern)
	case binFixed:
		return string(d.take(t.size))
	case binDate:
		return time.Unix(int64(d.fixed(2))*86400, 0).UTC()
	case binDate32:
		return time.Unix(signed(d.fixed(4), 4)*86400, 0).UTC()
	case binDateTime:
		return time.Unix(int64(d.fixed(4)), 0).UTC()
	case binDateTime64:
		return ticksTime(int64(d.fixed(8)), t.scale)
	case binEnum:
		v := signed(d.fixed(t.size), t.size)
		name, ok := t.names[v]
		if !ok && d.err == nil {
			d.err = fmt.Errorf("enum value %d has no name", v)
		}
		return name
	}
	return d.composite(t)
}

// composite reads the values that are not one number or one string.
func (d *binReader) composite(t *binType) any {
	switch t.kind {
	case binBigInt:
		return bigText(d.take(t.size), t.signed)
	case binDecimal:
		return d.decimal(t)
	case binUUID:
		return uuidText(d.take(16))
	case binIPv4:
		v := uint32(d.fixed(4))
		return fmt.Sprintf("%d.%d.%d.%d", v>>24, v>>16&0xff, v>>8&0xff, v&0xff)
	case binNullable:
		if d.fixed(1) != 0 || len(t.elem) == 0 {
			return nil
		}
		return d.value(t.elem[0])
	case binArray:
		n := d.length()
		out := make([]any, 0, n)
		for i := 0; i < n && d.err == nil; i++ {
			out = append(out, d.value(t.elem[0]))
		}
		return out
	case binTuple:
		out := make([]any, len(t.elem))
		for i, e := range t.elem {
			out[i] = d.value(e)
		}
		return out
	case binMap:
		n := d.length()
		out := make(map[string]any, min(n, 1024))
		for i := 0; i < n && d.err == nil; i++ {
			k := FormatValue(d.value(t.elem[0]))
			out[k] = d.value(t.elem[1])
		}
		return out
	}
	d.err = fmt.Errorf("%w: kind %d", ErrUnsupportedType, t.kind)
	return nil
}

// ticksTime is a DateTime64 of scale digits.
func ticksTime(ticks int64, scale int) time.Time {
	unit := int64(math.Pow10(scale))
	sec, rem := ticks/unit, ticks%unit
	if rem < 0 {
		sec, rem = sec-1, rem+unit
	}
	return time.Unix(sec, rem*int64(math.Pow10(9-scale))).UTC()
}

// decimal is the float64 nearest the decimal's value, as parsing its text gives:
// one division when both operands are exact in a float64, else through text.
func (d *binReader) decimal(t *binType) any {
	if t.size <= 8 {
		v := signed(d.fixed(t.size), t.size)
		if v > -1<<53 && v < 1<<53 && t.scale <= 22 {
			return float64(v) / math.Pow10(t.scale)
		}
		return decimalText(strconv.FormatInt(v, 10), t.scale)
	}
	p := d.take(t.size)
	if p == nil {
		return nil
	}
	return decimalText(bigText(p, true), t.scale)
}

// decimalText is digits × 10^-scale, correctly rounded (a value out of a
// float64's range is ±Inf, as parsing its JSON text gives).
func decimalText(digits string, scale int) float64 {
	f, _ := strconv.ParseFloat(digits+"e-"+strconv.Itoa(scale), 64)
	return f
}

// bigText is a little-endian two's-complement integer in decimal.
func bigText(p []byte, signed bool) string {
	if p == nil {
		return ""
	}
	be := make([]byte, len(p))
	for i, c := range p {
		be[len(p)-1-i] = c
	}
	v := new(big.Int).SetBytes(be)
	if signed && p[len(p)-1]&0x80 != 0 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(p))))
	}
	return v.String()
}

// uuidText writes a UUID, stored as two little-endian 64-bit halves, high half
// first, in its canonical text.
func uuidText(p []byte) string {
	if p == nil {
		return ""
	}
	var be [16]byte
	for i := range 8 {
		be[i], be[8+i] = p[7-i], p[15-i]
	}
	const hexd = "0123456789abcdef"
	out := make([]byte, 0, 36)
	for i, c := range be {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out = append(out, '-')
		}
		out = append(out, hexd[c>>4], hexd[c&0xf])
	}
	return string(out)
}

// Float32To64 widens a Float32 value through its shortest decimal form, as
// ClickHouse's JSON output does: Float32 0.1 reads back as 0.1, not
// 0.10000000149011612, so both backends and both output formats agree on values
// and on what FormatValue prints.
func Float32To64(f float32) float64 {
	switch {
	case f != f:
		return math.NaN()
	case math.IsInf(float64(f), 0):
		return float64(f)
	}
	out, err := strconv.ParseFloat(strconv.FormatFloat(float64(f), 'g', -1, 32), 64)
	if err != nil {
		return float64(f)
	}
	return out
}
