// Package metricsserver is the HTTP endpoint every long-running gpupool command
// serves: /metrics (Prometheus), /healthz (the process is up) and /readyz (the
// component can do its work), optionally behind TLS and basic auth.
//
// In: a listen address, an optional web configuration file in the format of every
// Prometheus exporter (github.com/prometheus/exporter-toolkit: tls_server_config,
// basic_auth_users with bcrypt hashes, http_server_config, rate_limit; re-read on
// every request, so rotating a password or a certificate needs no restart), a
// registry and a readiness check. Out: the endpoint, until the context ends. With a
// web configuration every path is behind it, the probes included
// (docs/metrics.md says how Kubernetes probes get through); without one it is plain
// HTTP, open. Beyond loopback it needs TLS or Config.Insecure (metrics_insecure), as
// the scheduler's API needs TLS or auth.insecure: Start refuses otherwise.
package metricsserver
