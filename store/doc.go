// Package store is gpupool's access to ClickHouse: the Block type ingest fills with
// rows, the Result type queries return, schema migration, the interface both
// backends implement, and the read-only SQL path for users' statements
// (QueryReadOnly: one read statement that touches no file, network or process).
//
// Backends live in subpackages so that nothing else links what it does not use:
// store/chdb is the embedded engine (libchdb.so, loaded on first use) and
// store/clickhouse talks to a ClickHouse server or cluster over the native protocol
// (clickhouse-go). Both run the same SQL.
//
// Reading rows: code that only reads takes a Querier, and decodes a Result with
// Read, whose Rows keeps the first error (a decode loop reads its cells, then
// checks Err once). Its rules are the program's one way: a missing column or a
// cell of the wrong type is an error naming the column and the query; NULL is the
// type's zero value unless the caller asks for the nullable form (FloatOr,
// NullFloat, NullTime); NaN from the engine stays NaN, and a caller that wants it
// as 0 says so where it reads.
package store
