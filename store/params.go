package store

import (
	"strings"
)

// BindParams returns params as the backends send them: the value of every
// parameter whose placeholders in sql are all of a string type (String,
// FixedString, Enum, under Nullable or LowCardinality) escaped as ClickHouse's
// escaped text format wants it, so the server reads it back as the very same
// string. The server parses each query parameter value as escaped text: unescaped,
// a value ending in a backslash, or holding a tab or a newline, is a parse error
// (and "\n" or "\N" a different value), so a filter a user typed would fail the
// query or match something else. Other types' values (numbers, dates, the array
// literals of ArrayParam) are sent as they are. params is not modified.
func BindParams(sql string, params Params) Params {
	if len(params) == 0 {
		return params
	}
	types := placeholderTypes(sql)
	var out Params
	for name, v := range params {
		ts, ok := types[name]
		if !ok || !strings.ContainsAny(v, "\\\t\n") || !allStrings(ts) {
			continue
		}
		if out == nil {
			out = make(Params, len(params))
			for k, x := range params {
				out[k] = x
			}
		}
		out[name] = escapeText(v)
	}
	if out == nil {
		return params
	}
	return out
}

// escaper writes a string in ClickHouse's escaped text format (TabSeparated's).
var escaper = strings.NewReplacer(`\`, `\\`, "\t", `\t`, "\n", `\n`)

func escapeText(s string) string { return escaper.Replace(s) }

func allStrings(types []string) bool {
	for _, t := range types {
		if !isStringType(t) {
			return false
		}
	}
	return true
}

// isStringType is a type whose text form is the string itself.
func isStringType(t string) bool {
	for {
		t = strings.TrimSpace(t)
		inner, ok := unwrapType(t, "Nullable")
		if !ok {
			inner, ok = unwrapType(t, "LowCardinality")
		}
		if !ok {
			break
		}
		t = inner
	}
	return t == "String" || strings.HasPrefix(t, "FixedString(") || strings.HasPrefix(t, "Enum")
}

// unwrapType is T of wrapper(T).
func unwrapType(t, wrapper string) (string, bool) {
	rest, ok := strings.CutPrefix(t, wrapper)
	if !ok {
		return "", false
	}
	rest = strings.TrimSpace(rest)
	if !strings.HasPrefix(rest, "(") || !strings.HasSuffix(rest, ")") {
		return "", false
	}
	return rest[1 : len(rest)-1], true
}

// placeholderTypes are the types of sql's {name:Type} placeholders, by name.
func placeholderTypes(sql string) map[string][]string {
	out := map[string][]string{}
	for {
		i := strings.IndexByte(sql, '{')
		if i < 0 {
			return out
		}
		sql = sql[i+1:]
		j := strings.IndexByte(sql, '}')
		if j < 0 {
			return out
		}
		name, typ, ok := strings.Cut(sql[:j], ":")
		name = strings.TrimSpace(name)
		if ok && isIdent(name) {
			out[name] = append(out[name], strings.TrimSpace(typ))
			sql = sql[j+1:]
		}
	}
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r != '_' && (r < '0' || r > '9') && (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') {
			return false
		}
	}
	return true
}
