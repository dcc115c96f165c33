package clickhouse

import _ "embed"

// FinanceSQL is finance.sql: the gpupool_finance and gpupool_pricing roles and their
// users. store/grants takes the roles from it for `gpupool migrate --print-grants`.
//
//go:embed finance.sql
var FinanceSQL string

// GrafanaSQL is grafana.sql: the gpupool_grafana role, its settings profile and its
// user. store/grants takes the role and the profile from it.
//
//go:embed grafana.sql
var GrafanaSQL string
