package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/internal/config"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/backend"
)

// busConn is a connection to NATS JetStream, with the embedded server when there is
// no external one.
type busConn struct {
	srv *bus.Server
	nc  *nats.Conn
	js  jetstream.JetStream
}

// openBus connects to the configured NATS (starting the embedded server if no URL
// is set) and creates the streams.
func openBus(ctx context.Context, c config.Config, name string, log *slog.Logger) (*busConn, error) {
	b := &busConn{}
	var err error
	if c.Bus.URL == "" {
		if b.srv, err = bus.StartEmbedded(c.Bus.Embedded, log); err != nil {
			return nil, err
		}
		if b.nc, err = b.srv.Connect(name); err != nil {
			b.Close()
			return nil, err
		}
	} else if b.nc, err = bus.Connect(c.Bus.ClientConfig, name, log); err != nil {
		return nil, err
	}
	if b.js, err = jetstream.New(b.nc); err != nil {
		b.Close()
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := bus.EnsureStreams(sctx, b.js, c.Bus.Streams); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// ready reports whether the connection to NATS is up (for /readyz).
func (b *busConn) ready() error {
	if !b.nc.IsConnected() {
		return errors.New("not connected to NATS")
	}
	return nil
}

// Close drains the connection and stops the embedded server, if any.
func (b *busConn) Close() {
	if b.nc != nil {
		_ = b.nc.Drain()
		for i := 0; i < 50 && !b.nc.IsClosed(); i++ {
			time.Sleep(20 * time.Millisecond)
		}
		b.nc.Close()
	}
	if b.srv != nil {
		b.srv.Shutdown()
	}
}

// openStore opens the configured store backend.
func openStore(ctx context.Context, c config.Config, log *slog.Logger, readOnly bool) (store.Store, error) {
	return backend.Open(ctx, c.Store, log, readOnly)
}

// openMigrated opens the store for writing and brings its schema up to date: what
// every command that writes starts with.
func openMigrated(ctx context.Context, c config.Config, log *slog.Logger) (store.Store, error) {
	return backend.OpenMigrated(ctx, c.Store, log)
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
