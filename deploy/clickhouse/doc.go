// Package clickhouse holds SQL an administrator runs on a ClickHouse server beside
// gpupool's own migrations: finance.sql (a read-only finance role and user limited
// to the finance views of docs/finance.md) and grafana.sql (a read-only user for
// the Grafana dashboards in deploy/grafana). Its only code embeds the two files
// (FinanceSQL, GrafanaSQL), so that store/grants renders their roles into
// `gpupool migrate --print-grants` for any database and cluster.
//
// Its tests parse every statement with ClickHouse's parser (chDB), keep finance.sql's
// grants equal to the objects docs/finance.md documents, run its ALTERs on a migrated
// database, and hold every role of `gpupool migrate --print-grants` to what its
// component really runs: each component's statements, recorded on chDB, may touch
// only the objects its role is granted (grants_test.go).
package clickhouse
