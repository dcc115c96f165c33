// Package helm holds the tests of the gpupool Helm chart in gpupool/: they render it
// with Helm's own template engine (the Helm Go SDK, as `helm template` does) for the
// default values, values-large.yaml and a few other shapes, decode every rendered
// object strictly (client-go's scheme for the built-in kinds, the fields this chart
// uses for ServiceMonitor, PrometheusRule and ClickHouseInstallation: an unknown field
// fails), and check what a platform team relies on: every container has requests and
// limits and runs as non-root on a read-only root filesystem, the scheduler's RBAC
// rules are exactly the calls its Kubernetes executor makes, the alert rules name
// metrics gpupool registers, and the dashboards are deploy/grafana's.
//
// The renders of the default and large values are kept in testdata/ (rewritten
// with -update); cmd/gpupool's tests parse every container's arguments and load
// the rendered configuration file with the real command line and config loader.
package helm
