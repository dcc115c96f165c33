package grafana

import (
	"slices"
	"strings"
	"testing"
)

// promRefs are the names a PromQL expression uses: metric (series) names, and
// label names in matchers and in by/without/on/ignoring/group_left/group_right
// clauses.
type promRefs struct {
	metrics, labels []string
}

// promKeywords are identifiers that are neither metrics nor functions.
var promKeywords = []string{"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left", "group_right", "inf", "nan", "atan2"}

// promAggregations are aggregation operators, which may be followed by a by or
// without clause before their parenthesis.
var promAggregations = []string{"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk", "topk", "quantile", "limitk", "limit_ratio"}

// labelClauses are keywords followed by a parenthesised list of label names.
var labelClauses = []string{"by", "without", "on", "ignoring", "group_left", "group_right"}

// scanPromQL finds the metric and label names of a PromQL expression (or of a
// Grafana label_values(metric, label) variable query). It is a scanner, not a
// parser: enough to catch a renamed metric or label, which is what it is for.
func scanPromQL(expr string) promRefs {
	var r promRefs
	s := expr
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			end := strings.IndexByte(s[i+1:], c)
			if end < 0 {
				return r
			}
			i += end + 2
		case c == '[': // range or subquery: durations and variables only
			end := strings.IndexByte(s[i:], ']')
			if end < 0 {
				return r
			}
			i += end + 1
		case c == '{': // label matchers
			end := indexUnquoted(s[i:], '}')
			if end < 0 {
				return r
			}
			for _, m := range strings.Split(stripStrings(s[i+1:i+end]), ",") {
				if k := strings.IndexAny(m, "=!~"); k > 0 {
					r.labels = append(r.labels, strings.TrimSpace(m[:k]))
				}
			}
			i += end + 1
		case c == '$': // a Grafana variable: $name or ${name}
			i++
			if i < len(s) && s[i] == '{' {
				if end := strings.IndexByte(s[i:], '}'); end >= 0 {
					i += end + 1
				}
				continue
			}
			for i < len(s) && isIdent(s[i]) {
				i++
			}
		case c >= '0' && c <= '9' || c == '.': // a number or a duration
			for i < len(s) && (isIdent(s[i]) || s[i] == '.') {
				i++
			}
		case isIdent(c) || c == ':':
			j := i
			for j < len(s) && (isIdent(s[j]) || s[j] == ':') {
				j++
			}
			word := s[i:j]
			k := j
			for k < len(s) && (s[k] == ' ' || s[k] == '\n' || s[k] == '\t') {
				k++
			}
			call := k < len(s) && s[k] == '('
			switch {
			case slices.Contains(labelClauses, strings.ToLower(word)) && call:
				end := strings.IndexByte(s[k:], ')')
				if end < 0 {
					return r
				}
				for _, l := range strings.Split(s[k+1:k+end], ",") {
					if l = strings.TrimSpace(l); l != "" {
						r.labels = append(r.labels, l)
					}
				}
				j = k + end + 1
			case word == "label_values" && call:
				// label_values(metric, label) or label_values(label).
				end := strings.LastIndexByte(s, ')')
				args := strings.Split(stripStrings(s[k+1:end]), ",")
				r.labels = append(r.labels, strings.TrimSpace(args[len(args)-1]))
				if len(args) > 1 {
					inner := scanPromQL(strings.Join(args[:len(args)-1], ","))
					r.metrics = append(r.metrics, inner.metrics...)
					r.labels = append(r.labels, inner.labels...)
				}
				return r
			case call, slices.Contains(promKeywords, strings.ToLower(word)), slices.Contains(promAggregations, strings.ToLower(word)):
			default:
				r.metrics = append(r.metrics, word)
			}
			i = j
		default:
			i++
		}
	}
	return r
}

// stripStrings blanks out quoted strings, so that commas and operators in label
// values do not split matchers.
func stripStrings(s string) string {
	var b strings.Builder
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
				b.WriteByte(c)
			}
		case c == '"' || c == '\'' || c == '`':
			quote = c
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// indexUnquoted is strings.IndexByte(s, c) skipping quoted strings.
func indexUnquoted(s string, c byte) int {
	var quote byte
	for i := 0; i < len(s); i++ {
		switch {
		case quote != 0:
			if s[i] == quote {
				quote = 0
			}
		case s[i] == '"' || s[i] == '\'' || s[i] == '`':
			quote = s[i]
		case s[i] == c:
			return i
		}
	}
	return -1
}

func TestScanPromQL(t *testing.T) {
	for _, c := range []struct {
		name, expr      string
		metrics, labels []string
	}{
		{"aggregation with by", `sum by (kind, reason) (rate(a_total[$__rate_interval]))`, []string{"a_total"}, []string{"kind", "reason"}},
		{"by after the parenthesis", `sum(rate(a_total[5m])) by (kind)`, []string{"a_total"}, []string{"kind"}},
		{"histogram quantile", `histogram_quantile(0.95, sum by (le) (rate(h_seconds_bucket[1m])))`, []string{"h_seconds_bucket"}, []string{"le"}},
		{"matchers with variables", `x{pool=~"$pool", card!="a,b}"} / on(pool) group_left y`, []string{"x", "y"}, []string{"pool", "card", "pool"}},
		{"numbers, offset and keywords", `a > 1e3 and b offset 5m or c * 2`, []string{"a", "b", "c"}, nil},
		{"label_values", `label_values(q{pool="p"}, queue)`, []string{"q"}, []string{"queue", "pool"}},
		{"label_values of a label", `label_values(pool)`, nil, []string{"pool"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := scanPromQL(c.expr)
			if !slices.Equal(got.metrics, c.metrics) || !slices.Equal(got.labels, c.labels) {
				t.Errorf("scanPromQL(%q) = %v %v, want %v %v", c.expr, got.metrics, got.labels, c.metrics, c.labels)
			}
		})
	}
}
