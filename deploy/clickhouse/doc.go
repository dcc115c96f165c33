// Package clickhouse holds SQL an administrator runs on a ClickHouse server beside
// gpupool's own migrations: finance.sql (a read-only finance role and user limited
// to the finance views of docs/finance.md) and grafana.sql (a read-only user for
// the Grafana dashboards in deploy/grafana). It has no code; its tests parse every
// statement with ClickHouse's parser (chDB), keep finance.sql's grants equal to the
// objects docs/finance.md documents, and run its ALTERs on a migrated database.
package clickhouse
