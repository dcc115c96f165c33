// Package store is gpupool's access to ClickHouse: the Block type ingest fills with
// rows, the Result type queries return, schema migration, the interface both
// backends implement, and the read-only SQL path for users' statements
// (QueryReadOnly: one read statement that touches no file, network or process).
//
// Backends live in subpackages so that nothing else links what it does not use:
// store/chdb is the embedded engine (libchdb.so, loaded on first use) and
// store/clickhouse talks to a ClickHouse server or cluster over the native protocol
// (clickhouse-go). Both run the same SQL.
package store
