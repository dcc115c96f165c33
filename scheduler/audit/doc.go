// Package audit connects the scheduler to the rest of gpupool: its audit trail
// goes to the store's actions table (StoreRecorder), its notices to owners to
// gpupool.alerts.<team> (BusNotifier, read by the Slack alerter in reports/alerts),
// and it reads the analyzer's open findings from the findings_open view
// (StoreFindings). The scheduler's job events go through bus.JobPublisher, the
// publisher every producer of job events shares.
//
// In: scheduler.Action rows, schemas.Notice values, a time. Out: rows in
// <db>.actions (see schemas/migrations/0005_actions.sql and 0006_actions_actor.sql
// for columns and units),
// messages on gpupool.alerts.<team>, schemas.Finding values.
package audit
