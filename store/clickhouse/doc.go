// Package clickhouse is the store.Store backend for an external ClickHouse server
// or cluster, spoken to over the native protocol (TCP 9000, or 9440 with TLS)
// through clickhouse-go.
//
// In: statements with {name:Type} placeholders and store.Params, bound on the
// server (never put into the SQL text); store.Blocks to insert, sent column by
// column in the Native format (widened where the table's column is wider), with an
// optional deduplication token (insert_deduplication_token) that makes a repeated
// insert a no-op. Out: store.Result rows whose values have the same Go kinds the
// embedded store (store/chdb, via store.ParseRowBinary) returns: int64, uint64,
// float64, bool, string, time.Time in UTC (DateTime64 keeps its milliseconds),
// []any, map[string]any, nil for NULL.
//
// Every statement runs with session_timezone = 'UTC', as the embedded store does,
// so time parameters and date functions mean the same on both backends; servers
// older than 23.6 do not know that setting, so use ClickHouse 24 or later. With a
// Cluster configured, Open creates the database ON CLUSTER; pass Store.Cluster() to
// store.Migrate so the tables are created on every server too.
//
// Tests against a real server run when GPUPOOL_TEST_CLICKHOUSE names one
// ("localhost:9000" or a DSN); the rest need no server.
package clickhouse
