package demo

import (
	"slices"

	"github.com/gpupool/gpupool/internal/summary"
	"github.com/gpupool/gpupool/schemas/textfmt"
	"github.com/gpupool/gpupool/store"
)

// The summary fits a terminal: no line wider than maxWidth columns (a longer
// caption or sentence is wrapped, a wider table split in two), and no caption
// longer than maxCaption characters.
const (
	maxWidth   = 140
	maxCaption = 200
)

// wrap breaks s at spaces into lines of at most width columns.
func wrap(s string, width int) string { return textfmt.Wrap(s, width, "") }

// fit wraps each section's caption at maxWidth.
func fit(secs []summary.Section) []summary.Section {
	out := make([]summary.Section, len(secs))
	for i, s := range secs {
		out[i] = summary.Section{Title: wrap(s.Title, maxWidth), Table: s.Table}
	}
	return out
}

// columns is res with only the named columns, in that order (a name res lacks
// is left out).
func columns(res *store.Result, names ...string) *store.Result {
	var idx []int
	out := &store.Result{}
	for _, n := range names {
		if i := slices.IndexFunc(res.Columns, func(c store.ColumnMeta) bool { return c.Name == n }); i >= 0 {
			idx = append(idx, i)
			out.Columns = append(out.Columns, res.Columns[i])
		}
	}
	for _, row := range res.Rows {
		r := make([]any, len(idx))
		for k, i := range idx {
			r[k] = row[i]
		}
		out.Rows = append(out.Rows, r)
	}
	return out
}
