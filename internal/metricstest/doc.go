// Package metricstest gathers every gpupool component's Prometheus metrics in one
// place, for the tests that keep them in order: the exposition golden file and
// promlint (this package's tests), and through that golden file the Grafana
// dashboards' check that every PromQL expression names a metric some component
// registers (deploy/grafana reads testdata/metrics.golden, so that deploy's tests
// import no component). It is a composition root: it imports every component that
// has metrics, and nothing below cmd imports it.
//
// In: the components' NewMetrics constructors, listed once in Components. Out: a
// registry per component (or all together) in which every metric vector has one
// series, so that gathering it yields every metric family with its name, type,
// help text and label names. Adding a component is one line in Components.
package metricstest
