package reports

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gpupool/gpupool/store"
)

// Formats Write accepts.
const (
	FormatTable = "table"
	FormatCSV   = "csv"
	FormatJSON  = "json"
)

// Write renders res in format (table, csv or json) to w.
func Write(w io.Writer, res *store.Result, format string) error {
	switch format {
	case FormatTable, "":
		return WriteTable(w, res)
	case FormatCSV:
		return WriteCSV(w, res)
	case FormatJSON:
		return WriteJSON(w, res)
	case FormatParquet:
		return WriteParquet(w, res)
	}
	return fmt.Errorf("reports: unknown format %q (want table, csv, json or parquet)", format)
}

// isNumeric reports whether a ClickHouse type is a number, for right alignment.
func isNumeric(typ string) bool {
	t := store.BaseType(typ)
	for _, p := range []string{"Int", "UInt", "Float", "Decimal"} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// cellText formats a value for a table: floats with at most 4 decimals, trailing
// zeros dropped, so columns stay readable.
func cellText(v any) string {
	if f, ok := v.(float64); ok && !math.IsNaN(f) && !math.IsInf(f, 0) {
		s := fmt.Sprintf("%.4f", f)
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		if s == "-0" {
			s = "0"
		}
		return s
	}
	return store.FormatValue(v)
}

// WriteTable writes res as an aligned text table with a header rule; numbers are
// right-aligned.
func WriteTable(w io.Writer, res *store.Result) error {
	n := len(res.Columns)
	if n == 0 {
		_, err := fmt.Fprintln(w, "(no columns)")
		return err
	}
	widths := make([]int, n)
	right := make([]bool, n)
	cells := make([][]string, len(res.Rows))
	for i, c := range res.Columns {
		widths[i] = utf8.RuneCountInString(c.Name)
		right[i] = isNumeric(c.Type)
	}
	for r, row := range res.Rows {
		cells[r] = make([]string, n)
		for i := range row {
			s := strings.ReplaceAll(cellText(row[i]), "\n", `\n`)
			cells[r][i] = s
			widths[i] = max(widths[i], utf8.RuneCountInString(s))
		}
	}
	var sb strings.Builder
	line := func(vals []string, header bool) {
		for i, v := range vals {
			if i > 0 {
				sb.WriteString("  ")
			}
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(v))
			if right[i] && !header {
				sb.WriteString(pad + v)
			} else if i == n-1 {
				sb.WriteString(v)
			} else {
				sb.WriteString(v + pad)
			}
		}
		sb.WriteString("\n")
	}
	names := make([]string, n)
	rules := make([]string, n)
	for i, c := range res.Columns {
		names[i] = c.Name
		rules[i] = strings.Repeat("─", widths[i])
	}
	line(names, true)
	line(rules, true)
	for _, row := range cells {
		line(row, false)
	}
	fmt.Fprintf(&sb, "(%d row%s)\n", len(res.Rows), plural(len(res.Rows)))
	_, err := io.WriteString(w, sb.String())
	return err
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// WriteCSV writes res as CSV with a header row (RFC 4180).
func WriteCSV(w io.Writer, res *store.Result) error {
	cw := csv.NewWriter(w)
	header := make([]string, len(res.Columns))
	for i, c := range res.Columns {
		header[i] = c.Name
	}
	if err := cw.Write(header); err != nil {
		return err
	}
	rec := make([]string, len(res.Columns))
	for _, row := range res.Rows {
		for i, v := range row {
			rec[i] = store.FormatValue(v)
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteJSON writes res as a JSON array of objects, one per row, keys in column
// order; times are RFC 3339, NaN and infinities null.
func WriteJSON(w io.Writer, res *store.Result) error {
	var sb strings.Builder
	sb.WriteString("[")
	for r, row := range res.Rows {
		if r > 0 {
			sb.WriteString(",")
		}
		sb.WriteString("\n  {")
		for i, v := range row {
			if i > 0 {
				sb.WriteString(", ")
			}
			k, _ := json.Marshal(res.Columns[i].Name)
			sb.Write(k)
			sb.WriteString(": ")
			b, err := json.Marshal(jsonValue(v))
			if err != nil {
				return fmt.Errorf("reports: column %s: %w", res.Columns[i].Name, err)
			}
			sb.Write(b)
		}
		sb.WriteString("}")
	}
	if len(res.Rows) > 0 {
		sb.WriteString("\n")
	}
	sb.WriteString("]\n")
	_, err := io.WriteString(w, sb.String())
	return err
}

func jsonValue(v any) any {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil
		}
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = jsonValue(x[i])
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = jsonValue(e)
		}
		return out
	}
	return v
}

// Count formats n with thousands separators: 1234567 is "1,234,567".
func Count(n uint64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
