// Package audit connects the scheduler to the rest of gpupool: its audit trail
// goes to the store's actions table (StoreRecorder), its job events to JetStream
// (BusPublisher, subject gpupool.jobs.<cluster>, where ingest stores them in
// job_events like any scheduler's), its notices to owners to gpupool.alerts.<team>
// (BusNotifier, read by the Slack alerter in reports/alerts), and it reads the
// analyzer's open findings from the findings_open view (StoreFindings).
//
// In: scheduler.Action rows, schemas.JobEvent batches, schemas.Notice values, a
// time. Out: rows in <db>.actions (see schemas/migrations/0005_actions.sql for
// columns and units), messages on gpupool.jobs.<cluster> and gpupool.alerts.<team>,
// schemas.Finding values.
package audit
