package grafana

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// The concrete values the checks give the ClickHouse plugin's macros: a week of
// November 2026 in one-minute intervals.
var (
	testFrom     = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	testTo       = time.Date(2026, 11, 8, 0, 0, 0, 0, time.UTC)
	testInterval = time.Minute
)

// varMode is how the template variables are set when a query is expanded.
type varMode int

const (
	varsAll varMode = iota // every variable at "All"
	varsOne                // every variable at one value, x
)

func (m varMode) String() string { return [...]string{"all", "one"}[m] }

// values returns what a multi-value variable holds in mode m.
func (m varMode) values() []string {
	if m == varsAll {
		return []string{"x", "y"}
	}
	return []string{"x"}
}

// expand replaces the grafana-clickhouse-datasource macros and the template
// variables in sql the way the plugin and Grafana do, with testFrom, testTo,
// testInterval and the variables in mode m. A macro it does not know is an error,
// so that a dashboard cannot use one these checks do not vouch for.
func expand(sql string, m varMode) (string, error) {
	var b strings.Builder
	for i := 0; i < len(sql); {
		if !strings.HasPrefix(sql[i:], "$__") {
			b.WriteByte(sql[i])
			i++
			continue
		}
		j := i + 3
		for j < len(sql) && isIdent(sql[j]) {
			j++
		}
		name := sql[i+3 : j]
		var args []string
		if j < len(sql) && sql[j] == '(' {
			end, err := closing(sql, j)
			if err != nil {
				return "", fmt.Errorf("macro $__%s: %w", name, err)
			}
			args = splitArgs(sql[j+1 : end])
			j = end + 1
		}
		out, err := macro(name, args, m)
		if err != nil {
			return "", err
		}
		b.WriteString(out)
		i = j
	}
	return variables(b.String(), m)
}

// macro expands one macro, as the plugin's documentation gives it.
func macro(name string, args []string, m varMode) (string, error) {
	from, to := testFrom.Unix(), testTo.Unix()
	fromMs, toMs := testFrom.UnixMilli(), testTo.UnixMilli()
	want := map[string]int{
		"timeFilter": 1, "timeFilter_ms": 1, "dateFilter": 1, "dateTimeFilter": 2, "dt": 2,
		"timeInterval": 1, "timeInterval_ms": 1, "conditionalAll": 2,
		"fromTime": 0, "toTime": 0, "fromTime_ms": 0, "toTime_ms": 0, "interval_s": 0,
	}
	n, ok := want[name]
	if !ok {
		return "", fmt.Errorf("unknown macro $__%s (the checks expand only the plugin's documented macros)", name)
	}
	if len(args) != n {
		return "", fmt.Errorf("macro $__%s takes %d arguments, has %d", name, n, len(args))
	}
	switch name {
	case "timeFilter":
		return fmt.Sprintf("%s >= toDateTime(%d) AND %s <= toDateTime(%d)", args[0], from, args[0], to), nil
	case "timeFilter_ms":
		return fmt.Sprintf("%s >= fromUnixTimestamp64Milli(%d) AND %s <= fromUnixTimestamp64Milli(%d)", args[0], fromMs, args[0], toMs), nil
	case "dateFilter":
		return fmt.Sprintf("%s >= toDate('%s') AND %s <= toDate('%s')", args[0], testFrom.Format(time.DateOnly), args[0], testTo.Format(time.DateOnly)), nil
	case "dateTimeFilter", "dt":
		d, _ := macro("dateFilter", args[:1], m)
		t, _ := macro("timeFilter", args[1:], m)
		return d + " AND " + t, nil
	case "timeInterval":
		return fmt.Sprintf("toStartOfInterval(toDateTime(%s), INTERVAL %d second)", args[0], int(testInterval.Seconds())), nil
	case "timeInterval_ms":
		return fmt.Sprintf("toStartOfInterval(toDateTime64(%s, 3), INTERVAL %d millisecond)", args[0], testInterval.Milliseconds()), nil
	case "conditionalAll":
		if m == varsAll {
			return "1=1", nil
		}
		return args[0], nil
	case "fromTime":
		return fmt.Sprintf("toDateTime(%d)", from), nil
	case "toTime":
		return fmt.Sprintf("toDateTime(%d)", to), nil
	case "fromTime_ms":
		return fmt.Sprintf("fromUnixTimestamp64Milli(%d)", fromMs), nil
	case "toTime_ms":
		return fmt.Sprintf("fromUnixTimestamp64Milli(%d)", toMs), nil
	}
	return fmt.Sprint(int(testInterval.Seconds())), nil // interval_s
}

// variables replaces $name, ${name} and ${name:format} with the mode's values
// (singlequote and sqlstring quote each; csv and the default join them).
func variables(sql string, m varMode) (string, error) {
	var b strings.Builder
	for i := 0; i < len(sql); {
		if sql[i] != '$' {
			b.WriteByte(sql[i])
			i++
			continue
		}
		var name, format string
		j := i + 1
		if strings.HasPrefix(sql[j:], "{") {
			end := strings.IndexByte(sql[j:], '}')
			if end < 0 {
				return "", fmt.Errorf("unclosed ${ at %d", i)
			}
			name, format, _ = strings.Cut(sql[j+1:j+end], ":")
			j += end + 1
		} else {
			for j < len(sql) && isIdent(sql[j]) {
				j++
			}
			name = sql[i+1 : j]
		}
		if name == "" || strings.HasPrefix(name, "__") {
			return "", fmt.Errorf("stray $ at %d: %q", i, sql[i:min(len(sql), i+20)])
		}
		vals := m.values()
		switch format {
		case "singlequote", "sqlstring":
			for k, v := range vals {
				vals[k] = "'" + v + "'"
			}
		case "", "csv", "raw":
		default:
			return "", fmt.Errorf("variable %s: format %q not supported by the checks", name, format)
		}
		b.WriteString(strings.Join(vals, ","))
		i = j
	}
	return b.String(), nil
}

func isIdent(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// closing returns the index of the parenthesis that closes the one at open,
// skipping quoted strings.
func closing(s string, open int) (int, error) {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return 0, fmt.Errorf("unclosed string")
			}
			i += end + 1
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i, nil
			}
		}
	}
	return 0, fmt.Errorf("unclosed parenthesis")
}

// splitArgs splits a macro's arguments at top-level commas.
func splitArgs(s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
		case '\'':
			if end := strings.IndexByte(s[i+1:], '\''); end >= 0 {
				i += end + 1
			}
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}

func TestExpand(t *testing.T) {
	for _, c := range []struct {
		name, sql string
		mode      varMode
		want      string
		err       string
	}{
		{"timeFilter", "WHERE $__timeFilter(ts)", varsAll, "WHERE ts >= toDateTime(1793491200) AND ts <= toDateTime(1794096000)", ""},
		{"timeFilter_ms", "$__timeFilter_ms(ts)", varsAll, "ts >= fromUnixTimestamp64Milli(1793491200000) AND ts <= fromUnixTimestamp64Milli(1794096000000)", ""},
		{"dateFilter", "$__dateFilter(day)", varsAll, "day >= toDate('2026-11-01') AND day <= toDate('2026-11-08')", ""},
		{"dt", "$__dt(d, t)", varsAll, "d >= toDate('2026-11-01') AND d <= toDate('2026-11-08') AND t >= toDateTime(1793491200) AND t <= toDateTime(1794096000)", ""},
		{"timeInterval of an expression", "$__timeInterval(assumeNotNull(x))", varsAll, "toStartOfInterval(toDateTime(assumeNotNull(x)), INTERVAL 60 second)", ""},
		{"from and to", "$__fromTime, $__toTime_ms, $__interval_s", varsAll, "toDateTime(1793491200), fromUnixTimestamp64Milli(1794096000000), 60", ""},
		{"conditionalAll at All", "$__conditionalAll(team IN (${team:singlequote}), $team)", varsAll, "1=1", ""},
		{"conditionalAll at one value", "$__conditionalAll(team IN (${team:singlequote}), $team)", varsOne, "team IN ('x')", ""},
		{"variable at All", "team IN (${team:singlequote})", varsAll, "team IN ('x','y')", ""},
		{"comma in a string argument", "$__conditionalAll(a IN ('p,q'), $a)", varsOne, "a IN ('p,q')", ""},
		{"unknown macro", "$__timeGroup(ts, 1m)", varsAll, "", "unknown macro"},
		{"wrong arity", "$__timeFilter(a, b)", varsAll, "", "takes 1 arguments"},
		{"unclosed", "$__timeFilter(ts", varsAll, "", "unclosed"},
		{"unknown format", "${team:json}", varsAll, "", "not supported"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := expand(c.sql, c.mode)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("expand(%q) = %q, %v; want an error containing %q", c.sql, got, err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Errorf("expand(%q) = %q, %v; want %q", c.sql, got, err, c.want)
			}
		})
	}
}
