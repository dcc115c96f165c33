// Package summary builds the summary tables that `gpupool analyze` and `gpupool
// demo` print: findings, findings by kind, chargeback by job attempt and card
// type, cost by team, the scheduler's effect in simulation, and the analyze
// report's tables as a whole.
//
// In: findings (analyzer/findings), chargeback rows (analyzer/chargeback), a
// trace analysis report (internal/traceanalysis), scheduler simulation reports
// (internal/simrun). Out: *store.Result tables for reports.WriteTable, and text
// on an io.Writer. Hours are GPU-hours, money is in the price book's currency
// rounded to cents, and a cost that cannot be priced reads "unpriced", never 0.
package summary
