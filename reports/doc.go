// Package reports turns query results into what people read: aligned text tables,
// CSV and JSON today; scheduled chargeback reports, HTML with charts and Slack alerts
// as they are built.
//
// In: *store.Result. Out: bytes on an io.Writer.
package reports
