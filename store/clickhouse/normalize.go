package clickhouse

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"math/big"
	"net"
	"reflect"
	"strconv"
	"time"

	"github.com/gpupool/gpupool/store"
)

// scanDest returns a fresh destination for rows.Scan of a column whose
// clickhouse-go scan type is t (a pointer to t). Nullable columns have pointer scan
// types, so NULL arrives as a nil pointer. A nil t (Nullable(Nothing), e.g. SELECT
// NULL) scans into *any.
func scanDest(t reflect.Type) any {
	if t == nil {
		return new(any)
	}
	return reflect.New(t).Interface()
}

// scanned returns the value a scan destination from scanDest holds, normalised.
func scanned(dest any) any { return normalize(dest) }

// normalize converts a value scanned by clickhouse-go into the kinds
// store.ParseJSONCompact produces, so that code reading a store.Result works the
// same on either backend: nil for NULL, int64 for signed and uint64 for unsigned
// integers, float64 for floats and decimals, bool, string (also for UUID, Enum,
// IPs, FixedString and the 128/256-bit integers, which JSON carries as text),
// time.Time in UTC, []any for arrays (Array(UInt8) too, which scans as []byte) and
// tuples, map[string]any for maps and named tuples (keys formatted as text, as
// JSON object keys are).
func normalize(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case bool, int64, uint64, float64, string:
		return x
	case int:
		return int64(x)
	case int8:
		return int64(x)
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case uint:
		return uint64(x)
	case uint8:
		return uint64(x)
	case uint16:
		return uint64(x)
	case uint32:
		return uint64(x)
	case float32:
		return store.Float32To64(x)
	case time.Time:
		return x.UTC()
	case net.IP:
		return formatIP(x)
	case *big.Int:
		if x == nil {
			return nil
		}
		return x.String()
	case json.Number:
		return normalizeNumber(x)
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = normalize(x[i])
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalize(e)
		}
		return out
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		// A nil pointer is NULL (Nullable columns scan into **T). A pointer is
		// dereferenced before its methods are asked for, since *time.Time and
		// *net.IP are Stringers too; only chcol.JSON has its method on the pointer.
		if rv.IsNil() {
			return nil
		}
		if j, ok := v.(interface{ NestedMap() map[string]any }); ok { // *chcol.JSON
			return normalize(j.NestedMap())
		}
		return normalize(rv.Elem().Interface())
	}
	// clickhouse-go's own and third-party value types, by what they can do.
	switch x := v.(type) {
	case interface{ InexactFloat64() float64 }: // shopspring decimal.Decimal (Decimal*)
		return x.InexactFloat64()
	case interface{ Any() any }: // chcol.Variant, chcol.Dynamic
		return normalize(x.Any())
	case driver.Valuer: // sql.Null*, uuid.UUID
		dv, err := x.Value()
		if err != nil {
			return fmt.Sprint(v)
		}
		return normalize(dv)
	case fmt.Stringer: // time.Duration (Time, Time64)
		return x.String()
	}
	switch rv.Kind() {
	case reflect.Slice, reflect.Array: // Array(T), orb geometry
		out := make([]any, rv.Len())
		for i := range out {
			out[i] = normalize(rv.Index(i).Interface())
		}
		return out
	case reflect.Map:
		out := make(map[string]any, rv.Len())
		it := rv.MapRange()
		for it.Next() {
			out[store.FormatValue(normalize(it.Key().Interface()))] = normalize(it.Value().Interface())
		}
		return out
	case reflect.Bool:
		return rv.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return rv.Uint()
	case reflect.Float32:
		return store.Float32To64(float32(rv.Float()))
	case reflect.Float64:
		return rv.Float()
	case reflect.String:
		return rv.String()
	}
	return fmt.Sprint(v)
}

// formatIP writes an address as ClickHouse does: IPv4 dotted, IPv6 in full form,
// including an IPv4-mapped IPv6 (::ffff:1.2.3.4), which Go would print as IPv4.
func formatIP(ip net.IP) string {
	if len(ip) == net.IPv6len && ip.To4() != nil {
		return "::ffff:" + ip.To4().String()
	}
	return ip.String()
}

// normalizeNumber reads a JSON number as the narrowest of int64, uint64, float64.
func normalizeNumber(n json.Number) any {
	if i, err := strconv.ParseInt(n.String(), 10, 64); err == nil {
		return i
	}
	if u, err := strconv.ParseUint(n.String(), 10, 64); err == nil {
		return u
	}
	if f, err := strconv.ParseFloat(n.String(), 64); err == nil {
		return f
	}
	return n.String()
}
