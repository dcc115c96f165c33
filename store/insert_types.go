package store

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// numericWidenings are, for each numeric type a block column is sent as, the
// wider table types that hold each of its values unchanged. The embedded
// engine casts to them; store/clickhouse converts the values to them itself.
var numericWidenings = map[string][]string{
	"UInt8":   {"UInt16", "UInt32", "UInt64", "Int16", "Int32", "Int64", "Float32", "Float64"},
	"UInt16":  {"UInt32", "UInt64", "Int32", "Int64", "Float32", "Float64"},
	"UInt32":  {"UInt64", "Int64", "Float64"},
	"Int32":   {"Int64", "Float64"},
	"Float32": {"Float64"},
}

// NumericWidens reports whether from (a numeric type a block column is sent as)
// goes into a table column of numeric type to with every value unchanged: the
// same type, or one listed in numericWidenings.
func NumericWidens(from, to string) bool {
	return from == to || slices.Contains(numericWidenings[from], to)
}

// CheckInsertType returns an error wrapping ErrNarrowing, naming the column and
// both types, unless every value of c's type fits a table column of type target
// unchanged. It allows what loses nothing: the same type; a wider number
// (UInt16 into UInt32 or Float64, Float32 into Float64, …); LowCardinality of
// the type or out of it; a SimpleAggregateFunction of the type; Nullable of the type (but not Nullable out of it: a NULL
// would become 0); a DateTime into a DateTime64, a DateTime64 into one of at least
// its precision, whatever their time zones (the instant is kept); arrays and
// maps of types that fit. Backends check each column before writing any row.
func CheckInsertType(c Column, target string) error {
	if TypeFits(c.Type(), target) {
		return nil
	}
	return fmt.Errorf("column %s (%s into %s): %w", c.Name(), c.Type(), target, ErrNarrowing)
}

// TypeFits reports whether every value of ClickHouse type from goes into a
// column of type to unchanged (see CheckInsertType).
func TypeFits(from, to string) bool {
	if from == to {
		return true
	}
	from, to = storedType(from), storedType(to)
	if f, ok := unwrap(from, "Nullable"); ok {
		t, ok := unwrap(to, "Nullable")
		return ok && TypeFits(f, t)
	}
	if t, ok := unwrap(to, "Nullable"); ok {
		return TypeFits(from, t)
	}
	if from == to || NumericWidens(from, to) {
		return true
	}
	if f, ok := unwrap(from, "Array"); ok {
		t, ok := unwrap(to, "Array")
		return ok && TypeFits(f, t)
	}
	if f, ok := unwrap(from, "Map"); ok {
		t, ok := unwrap(to, "Map")
		fa, ta := splitTypeArgs(f), splitTypeArgs(t)
		return ok && len(fa) == 2 && len(ta) == 2 && TypeFits(fa[0], ta[0]) && TypeFits(fa[1], ta[1])
	}
	fp, fok := timePrecision(from)
	tp, tok := timePrecision(to)
	return fok && tok && fp <= tp
}

// storedType is the type of the values typ holds: LowCardinality's and
// SimpleAggregateFunction's (whose values are its last argument's) taken off.
func storedType(typ string) string {
	if args, ok := unwrap(typ, "SimpleAggregateFunction"); ok {
		a := splitTypeArgs(args)
		typ = a[len(a)-1]
	}
	t, _ := unwrap(typ, "LowCardinality")
	return t
}

// timePrecision is the number of decimal places of seconds a DateTime (0) or
// DateTime64(p[, zone]) holds; ok is false for any other type.
func timePrecision(typ string) (int, bool) {
	if typ == "DateTime" || strings.HasPrefix(typ, "DateTime(") {
		return 0, true
	}
	args, ok := unwrap(typ, "DateTime64")
	if !ok {
		return 0, false
	}
	p, err := strconv.Atoi(splitTypeArgs(args)[0])
	return p, err == nil
}
