package summary

import (
	"io"

	"github.com/gpupool/gpupool/internal/traceanalysis"
	"github.com/gpupool/gpupool/reports"
)

// PrintTrace is `gpupool analyze`'s output: the report's warnings (skipped
// lines, duplicate records, price book problems) on errOut, then the report on
// out, as JSON (format reports.FormatJSON) or as tables (WriteTrace).
func PrintTrace(out, errOut io.Writer, rep *traceanalysis.Report, format string) error {
	WriteTraceWarnings(errOut, rep)
	if format == reports.FormatJSON {
		return WriteTraceJSON(out, rep)
	}
	return WriteTrace(out, rep)
}
