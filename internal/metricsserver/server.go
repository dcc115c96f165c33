package metricsserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/exporter-toolkit/web"
	"go.yaml.in/yaml/v3"

	"github.com/gpupool/gpupool/auth"
)

// Config says where and how the endpoint listens.
type Config struct {
	// Listen is the address, e.g. ":9464"; empty serves nothing.
	Listen string
	// WebConfigFile is an exporter-toolkit web configuration (TLS, basic auth);
	// empty serves plain HTTP with no authentication.
	WebConfigFile string
	// Insecure allows a non-loopback Listen without TLS (metrics_insecure): plain
	// HTTP on purpose, e.g. scraped inside a cluster network. Without it such a
	// Listen needs a WebConfigFile with tls_server_config, as the scheduler's API
	// needs TLS or auth.insecure.
	Insecure bool
}

// ErrInsecureListen means the endpoint was to listen beyond loopback in plain
// HTTP without metrics_insecure.
var ErrInsecureListen = errors.New("metrics: non-loopback listen without TLS")

// checkListen is the scheduler API's rule (auth.Config.CheckListen) for the
// metrics endpoint: a non-loopback address needs TLS or Insecure.
func checkListen(cfg Config, scheme string) error {
	if scheme == "https" || cfg.Insecure || auth.IsLoopback(cfg.Listen) {
		return nil
	}
	return fmt.Errorf("%w: %s would serve /metrics, /healthz and /readyz (and any basic_auth password) in clear text to the network; "+
		"set metrics_web_config to a web configuration with tls_server_config, or metrics_insecure: true to serve plain HTTP on purpose, "+
		"or listen on a loopback address such as 127.0.0.1%s (docs/metrics.md, \"TLS and basic auth\")", ErrInsecureListen, cfg.Listen, portOf(cfg.Listen))
}

func portOf(addr string) string {
	if _, port, err := net.SplitHostPort(addr); err == nil {
		return ":" + port
	}
	return ""
}

// Start checks the web configuration, listens on cfg.Listen and serves /metrics,
// /healthz and /readyz from reg and ready (nil error: ready) until ctx ends. It
// returns once listening, so that a bad address or web configuration fails the
// command at start; an empty cfg.Listen serves nothing.
func Start(ctx context.Context, cfg Config, reg *prometheus.Registry, ready func() error, log *slog.Logger) error {
	if cfg.Listen == "" {
		return nil
	}
	scheme, err := checkWebConfig(cfg.WebConfigFile)
	if err != nil {
		return err
	}
	if err := checkListen(cfg, scheme); err != nil {
		return err
	}
	if scheme != "https" && !auth.IsLoopback(cfg.Listen) {
		log.Warn("metrics endpoint is not protected", "why", "metrics_insecure: plain HTTP on a non-loopback address", "listen", cfg.Listen)
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
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("metrics: listen %s: %w", cfg.Listen, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	file := cfg.WebConfigFile
	// exporter-toolkit tells at Info what it listens on and whether TLS is on; the
	// line below says it once, in gpupool's words.
	quiet := slog.New(minLevel{log.Handler(), slog.LevelWarn})
	go func() {
		if err := web.Serve(ln, srv, &web.FlagConfig{WebConfigFile: &file}, quiet); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server stopped", "err", err)
		}
	}()
	attrs := []any{"url", scheme + "://" + ln.Addr().String() + "/metrics"}
	if file != "" {
		attrs = append(attrs, "web_config", file)
	}
	log.Info("metrics endpoint", attrs...)
	return nil
}

// checkWebConfig validates the web configuration file the way the endpoint will
// read it (certificates loaded, password hashes bcrypt) and returns the scheme it
// serves: https when it configures TLS.
func checkWebConfig(path string) (string, error) {
	if path == "" {
		return "http", nil
	}
	if err := web.Validate(path); err != nil {
		return "", fmt.Errorf("metrics: web config %s: %w (see docs/metrics.md, \"TLS and basic auth\")", path, err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("metrics: web config: %w", err)
	}
	var c web.Config
	if err := yaml.Unmarshal(raw, &c); err != nil {
		return "", fmt.Errorf("metrics: web config %s: %w", path, err)
	}
	if c.TLSConfig.IsEnabled() {
		return "https", nil
	}
	return "http", nil
}

// minLevel passes on the records of at least its level.
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(as), h.min}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{h.Handler.WithGroup(name), h.min}
}
