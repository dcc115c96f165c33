package store

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrUnsupportedType is a result column whose type ParseRowBinary does not read
// (see binKind); the caller asks for the text form instead.
var ErrUnsupportedType = errors.New("store: column type not read from RowBinary")

// binKind is how a RowBinary value of a column type is laid out and what it
// becomes in a Result.
type binKind uint8

const (
	binUint       binKind = iota // UInt8…UInt64, size bytes → uint64
	binInt                       // Int8…Int64 → int64
	binBigInt                    // Int128, Int256, UInt128, UInt256 → decimal text
	binFloat32                   // → float64 through its shortest decimal form
	binFloat64                   //
	binBool                      //
	binString                    // String; intern: a LowCardinality one (repeats)
	binFixed                     // FixedString(size)
	binDate                      // UInt16 days
	binDate32                    // Int32 days
	binDateTime                  // UInt32 seconds
	binDateTime64                // Int64 ticks of 10^-scale s
	binDecimal                   // size-byte integer scaled by 10^-scale → float64
	binEnum                      // Int8 or Int16 value → its name
	binUUID                      // two UInt64 halves → text
	binIPv4                      // UInt32 → dotted text
	binNullable                  // one byte (1: NULL), then elem[0] unless NULL
	binArray                     // uvarint length, then elem[0] values
	binTuple                     // elem values in order → []any
	binMap                       // uvarint length, then key, value pairs → map[string]any
)

// binType is a parsed column type.
type binType struct {
	kind   binKind
	size   int  // bytes of a fixed-size value
	signed bool // binBigInt, binEnum
	scale  int  // binDecimal, binDateTime64
	intern bool // binString under LowCardinality
	elem   []*binType
	names  map[int64]string // binEnum
}

// parseBinType reads a ClickHouse type name as RowBinaryWithNamesAndTypes writes
// it in its header. Types whose values it cannot read, or cannot turn into the
// values ParseJSONCompact gives (named tuples, IPv6, intervals, JSON, Variant,
// Dynamic, aggregate states, Nothing outside Nullable, maps keyed by anything but
// text or integers), are ErrUnsupportedType.
func parseBinType(typ string) (*binType, error) {
	return parseBinTypeIn(strings.TrimSpace(typ), false)
}

var fixedKinds = map[string]binType{
	"UInt8": {kind: binUint, size: 1}, "UInt16": {kind: binUint, size: 2}, "UInt32": {kind: binUint, size: 4}, "UInt64": {kind: binUint, size: 8},
	"Int8": {kind: binInt, size: 1}, "Int16": {kind: binInt, size: 2}, "Int32": {kind: binInt, size: 4}, "Int64": {kind: binInt, size: 8},
	"UInt128": {kind: binBigInt, size: 16}, "UInt256": {kind: binBigInt, size: 32},
	"Int128": {kind: binBigInt, size: 16, signed: true}, "Int256": {kind: binBigInt, size: 32, signed: true},
	"Float32": {kind: binFloat32, size: 4}, "Float64": {kind: binFloat64, size: 8},
	"Bool": {kind: binBool, size: 1}, "String": {kind: binString},
	"Date": {kind: binDate, size: 2}, "Date32": {kind: binDate32, size: 4},
	"DateTime": {kind: binDateTime, size: 4}, "UUID": {kind: binUUID, size: 16}, "IPv4": {kind: binIPv4, size: 4},
}

func parseBinTypeIn(typ string, lowCard bool) (*binType, error) {
	if t, ok := fixedKinds[typ]; ok {
		t.intern = lowCard && t.kind == binString
		return &t, nil
	}
	name, args, ok := splitTypeCall(typ)
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnsupportedType, typ)
	}
	switch name {
	case "LowCardinality":
		return oneArg(args, typ, true)
	case "Nullable":
		if len(args) == 1 && args[0] == "Nothing" {
			return &binType{kind: binNullable}, nil
		}
		e, err := oneArg(args, typ, lowCard)
		if err != nil {
			return nil, err
		}
		return &binType{kind: binNullable, elem: []*binType{e}}, nil
	case "SimpleAggregateFunction":
		// Its values are its type's; the function's name comes first.
		if len(args) < 2 {
			return nil, fmt.Errorf("%w: %s", ErrUnsupportedType, typ)
		}
		return parseBinTypeIn(args[len(args)-1], lowCard)
	case "DateTime":
		return &binType{kind: binDateTime, size: 4}, nil // DateTime('zone'): the zone is how it is written, not what it is
	case "DateTime64":
		return dateTime64(args, typ)
	case "Decimal", "Decimal32", "Decimal64", "Decimal128", "Decimal256":
		return decimal(name, args, typ)
	case "FixedString":
		n, err := intArg(args, 0, typ)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%w: %s", ErrUnsupportedType, typ)
		}
		return &binType{kind: binFixed, size: n}, nil
	case "Enum8", "Enum16":
		return enum(name, args, typ)
	case "Array":
		e, err := oneArg(args, typ, false)
		if err != nil {
			return nil, err
		}
		return &binType{kind: binArray, elem: []*binType{e}}, nil
	case "Tuple":
		return tuple(args, typ)
	case "Map":
		return mapType(args, typ)
	}
	return nil, fmt.Errorf("%w: %s", ErrUnsupportedType, typ)
}

func oneArg(args []string, typ string, lowCard bool) (*binType, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("%w: %s", ErrUnsupportedType, typ)
	}
	return parseBinTypeIn(args[0], lowCard)
}

func intArg(args []string, i int, typ string) (int, error) {
	if i >= len(args) {
		return 0, fmt.Errorf("%w: %s", ErrUnsupportedType, typ)
	}
	n, err := strconv.Atoi(args[i])
	if err != nil {
		return 0, fmt.Errorf("%w: %s", ErrUnsupportedType, typ)
	}
	return n, nil
}

func dateTime64(args []string, typ string) (*binType, error) {
	p, err := intArg(args, 0, typ)
	if err != nil || p < 0 || p > 9 || len(args) > 2 {
		return nil, fmt.Errorf("%w: %s", ErrUnsupportedType, typ)
	}
	return &binType{kind: binDateTime64, size: 8, scale: p}, nil
}

// decimal is Decimal(P, S) or DecimalN(S): its size follows from the precision.
func decimal(name string, args []string, typ string) (*binType, error) {
	var p, s int
	var err error
	switch name {
	case "Decimal":
		p, err = intArg(args, 0, typ)
		if err == nil {
			s, err = intArg(args, 1, typ)
		}
	default:
		p = map[string]int{"Decimal32": 9, "Decimal64": 18, "Decimal128": 38, "Decimal256": 76}[name]
		s, err = intArg(args, 0, typ)
	}
	if err != nil || p < 1 || p > 76 || s < 0 || s > p {
		return nil, fmt.Errorf("%w: %s", ErrUnsupportedType, typ)
	}
	size := 32
	switch {
	case p <= 9:
		size = 4
	case p <= 18:
		size = 8
	case p <= 38:
		size = 16
	}
	return &binType{kind: binDecimal, size: size, scale: s, signed: true}, nil
}

// enum reads Enum8('a' = 1, 'b' = 2)'s names by value.
func enum(name string, args []string, typ string) (*binType, error) {
	t := &binType{kind: binEnum, size: 1, signed: true, names: make(map[int64]string, len(args))}
	if name == "Enum16" {
		t.size = 2
	}
	for _, a := range args {
		i := strings.LastIndexByte(a, '=')
		if i < 0 {
			return nil, fmt.Errorf("%w: %s", ErrUnsupportedType, typ)
		}
		v, err := strconv.ParseInt(strings.TrimSpace(a[i+1:]), 10, 64)
		lit := strings.TrimSpace(a[:i])
		n, ok := unquote(lit)
		if err != nil || !ok {
			return nil, fmt.Errorf("%w: %s", ErrUnsupportedType, typ)
		}
		t.names[v] = n
	}
	return t, nil
}

// unquote reads a ClickHouse string literal 'a\'b'.
func unquote(lit string) (string, bool) {
	if len(lit) < 2 || lit[0] != '\'' || lit[len(lit)-1] != '\'' {
		return "", false
	}
	var b strings.Builder
	body := lit[1 : len(lit)-1]
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c == '\\' && i+1 < len(body) {
			i++
			c = unescape(body[i])
		} else if c == '\'' && i+1 < len(body) && body[i+1] == '\'' {
			i++
		}
		b.WriteByte(c)
	}
	return b.String(), true
}

// unescape is the byte a backslash escape stands for.
func unescape(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 't':
		return '\t'
	case 'r':
		return '\r'
	case '0':
		return 0
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	}
	return c
}

// tuple is an unnamed tuple (a named one, "Tuple(a UInt8)", is text: its JSON
// form is an object of unconverted values).
func tuple(args []string, typ string) (*binType, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("%w: %s", ErrUnsupportedType, typ)
	}
	t := &binType{kind: binTuple}
	for _, a := range args {
		e, err := parseBinTypeIn(a, false)
		if err != nil {
			return nil, err
		}
		t.elem = append(t.elem, e)
	}
	return t, nil
}

// mapType is a map keyed by text or integers (JSON object keys: other keys' text
// forms are the engine's to choose).
func mapType(args []string, typ string) (*binType, error) {
	if len(args) != 2 {
		return nil, fmt.Errorf("%w: %s", ErrUnsupportedType, typ)
	}
	k, err := parseBinTypeIn(args[0], false)
	if err != nil {
		return nil, err
	}
	if k.kind != binString && k.kind != binUint && k.kind != binInt {
		return nil, fmt.Errorf("%w: %s", ErrUnsupportedType, typ)
	}
	v, err := parseBinTypeIn(args[1], false)
	if err != nil {
		return nil, err
	}
	return &binType{kind: binMap, elem: []*binType{k, v}}, nil
}

// splitTypeCall splits "Name(a, b)" into Name and its top-level arguments,
// minding quotes ('a,b' is one argument) and nested parentheses.
func splitTypeCall(typ string) (string, []string, bool) {
	open := strings.IndexByte(typ, '(')
	if open <= 0 || !strings.HasSuffix(typ, ")") {
		return "", nil, false
	}
	name, body := typ[:open], typ[open+1:len(typ)-1]
	var args []string
	depth, start, quoted := 0, 0, false
	for i := 0; i < len(body); i++ {
		switch c := body[i]; {
		case quoted && c == '\\':
			i++
		case c == '\'':
			quoted = !quoted
		case quoted:
		case c == '(':
			depth++
		case c == ')':
			depth--
			if depth < 0 {
				return "", nil, false
			}
		case c == ',' && depth == 0:
			args = append(args, strings.TrimSpace(body[start:i]))
			start = i + 1
		}
	}
	if depth != 0 || quoted {
		return "", nil, false
	}
	if rest := strings.TrimSpace(body[start:]); rest != "" || len(args) > 0 {
		args = append(args, rest)
	}
	return name, args, true
}
