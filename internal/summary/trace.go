package summary

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/gpupool/gpupool/internal/traceanalysis"
	"github.com/gpupool/gpupool/reports"
)

// WriteTrace writes a trace analysis as aligned tables: a line on the trace, then
// its findings, findings by kind, chargeback and cost by team, and a pointer to
// the price book's problems when there are any.
func WriteTrace(w io.Writer, rep *traceanalysis.Report) error {
	t := rep.Trace
	if _, err := fmt.Fprintf(w, "Trace %s: %s → %s, %s GPU rows, %s process rows, %s job events; %d analyzer passes every %s\n",
		t.File, t.Start.Format(time.RFC3339), t.End.Format(time.RFC3339), reports.Count(t.GPURows), reports.Count(t.ProcessRows),
		reports.Count(t.JobEvents), t.Passes, time.Duration(t.IntervalSeconds*float64(time.Second))); err != nil {
		return err
	}
	err := Write(w, []Section{
		{fmt.Sprintf("Findings (%d)", len(rep.Findings)), Findings(rep.Findings)},
		{"Findings by kind", FindingsByKind(rep.Findings)},
		{"Chargeback by job attempt and card type (GPU-hours; cost in the price book's currency)", Chargeback(rep.Chargeback)},
		{"Cost by team", CostByTeam(rep.Chargeback)},
	})
	if err != nil {
		return err
	}
	if len(rep.PriceProblems) > 0 {
		_, err = fmt.Fprintf(w, "\nPrice book problems (%d): see stderr and docs/finance.md\n", len(rep.PriceProblems))
	}
	return err
}

// WriteTraceJSON writes a trace analysis as one indented JSON object.
func WriteTraceJSON(w io.Writer, rep *traceanalysis.Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// WriteTraceWarnings writes what a trace analysis skipped or doubts, one warning a
// line: bad lines skipped, duplicate records, price book problems.
func WriteTraceWarnings(w io.Writer, rep *traceanalysis.Report) {
	for _, le := range rep.LineErrors {
		fmt.Fprintf(w, "warning: skipped %s\n", le.Error())
	}
	t := rep.Trace
	if t.SkippedLines > 0 {
		fmt.Fprintf(w, "warning: %d line(s) skipped in all (%d late, %d in the future, %d breaking a bound between lines; the first %d listed above)\n",
			t.SkippedLines, t.LateLines, t.FutureLines, t.InvalidLines, len(rep.LineErrors))
	}
	if t.ReorderedLines > 0 {
		fmt.Fprintf(w, "warning: %d line(s) came after a line of a later time and were put in place before billing\n", t.ReorderedLines)
	}
	if len(rep.JobsWithoutTeam) > 0 {
		fmt.Fprintf(w, "warning: %d job(s) left out of the chargeback: no event of theirs names a team (the first: %s)\n", len(rep.JobsWithoutTeam), rep.JobsWithoutTeam[0])
	}
	if n := rep.Trace.DuplicateRecords; n > 0 {
		fmt.Fprintf(w, "warning: %d duplicate record(s) (the same GPU, process or job event at the same time) were counted once\n", n)
	}
	for _, p := range rep.PriceProblems {
		fmt.Fprintf(w, "warning: price book: %s\n", p)
	}
}

// TraceProgress draws a trace analysis's progress on prog; size is the trace's.
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
