package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gpupool/gpupool/internal/config"
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
		if addr != "" {
			c.MetricsListen = addr
		}
	}
}

// newRegistry returns a Prometheus registry with the Go and process collectors.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// serveMetrics serves /metrics, /healthz and /readyz on addr until ctx ends. ready
// reports whether the component can do its work (nil: ready).
func serveMetrics(ctx context.Context, addr string, reg *prometheus.Registry, ready func() error, log *slog.Logger) error {
	if addr == "" {
		return nil
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := ready(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("metrics: listen %s: %w", addr, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server stopped", "err", err)
		}
	}()
	log.Info("metrics endpoint", "url", "http://"+ln.Addr().String()+"/metrics")
	return nil
}

// stdout is w, or os.Stdout when w is nil.
func stdout(w io.Writer) io.Writer {
	if w != nil {
		return w
	}
	return os.Stdout
}
