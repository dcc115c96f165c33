// Package storetest is the behaviour every store.Store backend shares, as one test
// suite: insert and query round trips of every column type, insert deduplication,
// query parameters, the kinds of result values, migrations, reopening a database
// and read-only stores. Each backend's tests call Run with a Backend that opens a
// fresh database of its own (store/chdb on the test binary's one data path,
// store/clickhouse on a chDB endpoint or a real server), so both are held to the
// same assertions; what only one backend has (the embedded engine's allocator and
// data path, the server's failover and async inserts) stays in its own package.
//
// Only tests and test helpers import it.
package storetest
