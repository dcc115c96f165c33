package summary

import (
	"fmt"
	"io"
	"time"

	"github.com/gpupool/gpupool/analyzer/traceanalysis"
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
