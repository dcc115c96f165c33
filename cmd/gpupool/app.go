package main

import (
	"context"
	"io"
	"log/slog"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/gpupool/gpupool/internal/config"
	"github.com/gpupool/gpupool/internal/metricsserver"
)

// setup loads the configuration, puts the command's flags over it (apply, may be
// nil), validates it and makes the logger: what every command starts with.
func (g *Globals) setup(apply func(*config.Config)) (config.Config, *slog.Logger, error) {
	c, err := g.loadConfig()
	if err != nil {
		return c, nil, err
	}
	if apply != nil {
		apply(&c)
	}
	if err := c.Finish(g.Config); err != nil {
		return c, nil, err
	}
	return c, newLogger(c.LogLevel), nil
}

// withMetrics sets the --metrics address over metrics_listen.
func withMetrics(addr string) func(*config.Config) {
	return func(c *config.Config) {
		setIf(&c.MetricsListen, addr)
	}
}

// newRegistry returns a Prometheus registry with the Go and process collectors.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// serveMetrics serves /metrics, /healthz and /readyz on addr until ctx ends, behind
// the TLS and basic auth of c.MetricsWebConfig (an exporter-toolkit web
// configuration file; "" for none); beyond loopback it needs TLS or
// c.MetricsInsecure. ready reports whether the component can do its work (nil:
// ready).
func serveMetrics(ctx context.Context, addr string, c config.Config, reg *prometheus.Registry, ready func() error, log *slog.Logger) error {
	return metricsserver.Start(ctx, metricsserver.Config{Listen: addr, WebConfigFile: c.MetricsWebConfig, Insecure: c.MetricsInsecure}, reg, ready, log)
}

// stdout is w, or os.Stdout when w is nil.
func stdout(w io.Writer) io.Writer {
	if w != nil {
		return w
	}
	return os.Stdout
}

// stderr is w, or os.Stderr when w is nil: where a command says what it did
// besides its output (logs go there too).
func stderr(w io.Writer) io.Writer {
	if w != nil {
		return w
	}
	return os.Stderr
}

// setIf sets *dst to v unless v is its type's zero value: a flag left unset keeps
// the configuration's setting.
func setIf[T comparable](dst *T, v T) {
	var zero T
	if v != zero {
		*dst = v
	}
}

// setPositive sets *dst to v when v is above zero (a duration or count flag).
func setPositive[T ~int | ~int64 | ~float64](dst *T, v T) {
	if v > 0 {
		*dst = v
	}
}
