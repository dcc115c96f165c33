// Package billing builds the scheduled chargeback report and renders it for
// people and spreadsheets.
//
// In: the analyzer's finance views (chargeback_priced, queue_wait; see
// docs/finance.md) and its findings table (every finding episode that overlapped
// the period, open or resolved since), read with parameterised queries through a
// Querier, for a reports.Period. Out: a Report (GPU-hours, money in the price book's currency,
// energy in kWh, queue wait in hours, ratios 0..1) written as one long-form CSV, one
// JSON object or one self-contained HTML page with inline SVG charts, to a reports
// directory under stable names (<name>-<period>.<format>), and optionally posted to
// Slack.
//
// It is a package of its own, beside reports' generic formats, schedules and charts,
// because it is one report with its own data model; other reports can sit beside it
// without sharing its types.
package billing
