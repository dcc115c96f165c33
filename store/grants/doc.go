// Package grants is least privilege on ClickHouse for gpupool: the roles each
// component's own user gets, the row policies that scope a team's reader to its
// team, and their DDL for `gpupool migrate --print-grants`.
//
// In: Params (the database and cluster the migrations were rendered for, the teams
// to make readers for), gpupool's migrations (schemas), and deploy/clickhouse's
// finance.sql and grafana.sql, whose roles are taken as they are written there. Out:
// a Plan (views switched to SQL SECURITY DEFINER, settings profiles, roles with
// their grants, row policies) and its DDL: idempotent statements (IF NOT EXISTS),
// ON CLUSTER when a cluster is set, that an administrator runs once after `gpupool
// migrate`. It creates no users and no passwords: users are the administrator's, one
// per component, each given its role (docs/store-security.md).
//
// The roles: gpupool_ingest, gpupool_analyzer, gpupool_scheduler and gpupool_reports
// for the services; gpupool_finance and gpupool_pricing (finance.sql);
// gpupool_grafana (grafana.sql); gpupool_team_<team> per team, each seeing only its
// team's rows of the objects that carry a team. deploy/clickhouse's tests record the
// statements every component runs on chDB and hold each role to them.
package grants
