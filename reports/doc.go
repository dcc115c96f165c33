// Package reports turns query results into what people read: aligned text tables,
// CSV, JSON and Parquet (format.go, parquet.go), inline SVG charts (svg.go), report
// periods (period.go), cron schedules with one catch-up run (schedule.go) and the
// `reports:` configuration (config.go). The chargeback report itself is built and
// rendered in reports/billing; Slack alerts about findings are in reports/alerts;
// the summary tables of `gpupool analyze` and `gpupool demo` are in
// internal/summary.
//
// In: *store.Result. Out: bytes on an io.Writer.
package reports
