package summary

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/gpupool/gpupool/analyzer/traceanalysis"
	"github.com/gpupool/gpupool/reports"
)

// PrintTrace is `gpupool analyze`'s output: the report's warnings (skipped
// lines, duplicate records, price book problems) on errOut, then the report on
// out, as JSON (format reports.FormatJSON) or as tables (WriteTrace).
func PrintTrace(out, errOut io.Writer, rep *traceanalysis.Report, format string) error {
	for _, le := range rep.LineErrors {
		fmt.Fprintf(errOut, "warning: skipped %s\n", le.Error())
	}
	if n := rep.Trace.DuplicateRecords; n > 0 {
		fmt.Fprintf(errOut, "warning: %d duplicate record(s) (the same GPU, process or job event at the same time) were counted once\n", n)
	}
	for _, p := range rep.PriceProblems {
		fmt.Fprintf(errOut, "warning: price book: %s\n", p)
	}
	if format == reports.FormatJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return WriteTrace(out, rep)
}

// TraceProgress draws a trace analysis's progress on prog; size is the trace
// file's, in bytes (0: unknown).
func TraceProgress(prog *reports.Progress, size int64) func(traceanalysis.Progress) {
	return func(p traceanalysis.Progress) {
		frac := 1.0
		if !p.Done {
			frac = 0
			if size > 0 {
				frac = float64(p.BytesRead) / float64(size)
			}
		}
		prog.Update(fmt.Sprintf("%s %3.0f%%  trace %s  rows %s  passes %d", reports.Bar(frac), frac*100,
			p.At.Format("2006-01-02 15:04"), reports.Count(p.Rows), p.Passes), p.Done)
	}
}
