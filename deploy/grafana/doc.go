// Package grafana holds gpupool's Grafana dashboards (dashboards/*.json, embedded
// as Files and parsed by Load) and their provisioning files (provisioning/), with
// the tests that keep the dashboards true to the system.
//
// In: the dashboards, every component's Prometheus metrics (the golden file that
// internal/metricstest writes from the components' registries) and the ClickHouse
// schema (schemas/migrations). The tests check that every
// PromQL expression names metrics and labels some component registers, and that
// every ClickHouse query, with the plugin's macros expanded to concrete values,
// runs on an embedded database migrated with the real migrations: renaming a
// metric, a view or a column breaks the test, not the dashboard.
package grafana
