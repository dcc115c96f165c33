package summary

import (
	"fmt"
	"io"
	"math"

	"github.com/gpupool/gpupool/reports"
	"github.com/gpupool/gpupool/store"
)

// Section is one titled table of a summary.
type Section struct {
	Title string
	Table *store.Result
}

// Write writes each section as a blank line, its title and its table.
func Write(w io.Writer, sections []Section) error {
	for _, s := range sections {
		if _, err := fmt.Fprintf(w, "\n%s\n", s.Title); err != nil {
			return err
		}
		if err := reports.WriteTable(w, s.Table); err != nil {
			return err
		}
	}
	return nil
}

// cols builds column metadata from name, type pairs.
func cols(spec ...string) []store.ColumnMeta {
	out := make([]store.ColumnMeta, 0, len(spec)/2)
	for i := 0; i+1 < len(spec); i += 2 {
		out = append(out, store.ColumnMeta{Name: spec[i], Type: spec[i+1]})
	}
	return out
}

// money is a cost cell: the figure, or "unpriced" (never a silent 0).
func money(v *float64) any {
	if v == nil {
		return "unpriced"
	}
	return round2(*v)
}

func round2(x float64) float64 { return math.Round(x*100) / 100 }

func round1(x float64) float64 { return float64(int64(x*10+0.5)) / 10 }
