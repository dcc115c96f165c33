package main

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpupool/gpupool/internal/config"
	"github.com/gpupool/gpupool/internal/metricstest"
)

// urlCatcher is a slog handler that keeps the url attribute of the records it sees
// (serveMetrics logs the address it listens on).
type urlCatcher struct {
	mu  sync.Mutex
	url string
}

func (h *urlCatcher) Enabled(context.Context, slog.Level) bool { return true }
func (h *urlCatcher) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *urlCatcher) WithGroup(string) slog.Handler            { return h }
func (h *urlCatcher) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "url" {
			h.mu.Lock()
			h.url = a.Value.String()
			h.mu.Unlock()
		}
		return true
	})
	return nil
}

// TestServeMetrics starts the endpoint every long-running command serves and
// checks /metrics (every component's metrics beside the Go and process ones),
// /healthz and /readyz, ready and not, and that it stops with its context.
func TestServeMetrics(t *testing.T) {
	reg := newRegistry()
	for _, c := range metricstest.Components {
		c.Register(metricstest.Populating(reg))
	}
	var notReady atomic.Pointer[error]
	ready := func() error {
		if p := notReady.Load(); p != nil {
			return *p
		}
		return nil
	}
	h := &urlCatcher{}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if err := serveMetrics(ctx, "127.0.0.1:0", config.Config{}, reg, ready, slog.New(h)); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	metricsURL := h.url
	h.mu.Unlock()
	base, ok := strings.CutSuffix(metricsURL, "/metrics")
	if !ok {
		t.Fatalf("serveMetrics logged url %q", metricsURL)
	}
	client := &http.Client{Timeout: 5 * time.Second}
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := client.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(body)
	}

	code, body := get("/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d\n%s", code, body)
	}
	for _, want := range []string{
		"# TYPE go_goroutines gauge", "# TYPE process_cpu_seconds_total counter",
		"# TYPE gpupool_collector_batches_published_total counter", "# TYPE gpupool_ingest_batch_rows histogram",
		"# TYPE gpupool_scheduler_pass_seconds histogram", "# TYPE gpupool_alerts_sent_total counter",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}

	for _, c := range []struct {
		name     string
		path     string
		notReady error
		code     int
		body     string
	}{
		{"healthz", "/healthz", nil, http.StatusOK, "ok\n"},
		{"readyz ready", "/readyz", nil, http.StatusOK, "ok\n"},
		{"readyz not ready", "/readyz", errors.New("not connected to NATS"), http.StatusServiceUnavailable, "not connected to NATS\n"},
		{"healthz while not ready", "/healthz", errors.New("not connected to NATS"), http.StatusOK, "ok\n"},
		{"readyz ready again", "/readyz", nil, http.StatusOK, "ok\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.notReady != nil {
				notReady.Store(&c.notReady)
			} else {
				notReady.Store(nil)
			}
			if code, body := get(c.path); code != c.code || body != c.body {
				t.Errorf("%s: %d %q, want %d %q", c.path, code, body, c.code, c.body)
			}
		})
	}

	cancel()
	waitUntil(t, "the endpoint to stop with its context", 5*time.Second, func() error {
		resp, err := client.Get(base + "/healthz")
		if err != nil {
			return nil
		}
		resp.Body.Close()
		return errors.New("it still answers")
	})
}

// TestServeMetricsDisabled: an empty address serves nothing and is not an error.
func TestServeMetricsDisabled(t *testing.T) {
	if err := serveMetrics(t.Context(), "", config.Config{}, newRegistry(), nil, slog.New(&urlCatcher{})); err != nil {
		t.Fatal(err)
	}
}

// TestCommandsServeMetrics checks the wiring of every command with a --metrics
// flag (a Cmd struct with a Metrics field): the file that declares it calls
// serveMetrics, so /metrics, /healthz and /readyz come with the flag. And every
// long-running command has the flag.
func TestCommandsServeMetrics(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	withFlag := map[string]string{} // command type → file
	serves := map[string]bool{}     // file → calls serveMetrics
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.TypeSpec:
				st, ok := n.Type.(*ast.StructType)
				if !ok || !strings.HasSuffix(n.Name.Name, "Cmd") {
					return true
				}
				for _, fld := range st.Fields.List {
					for _, id := range fld.Names {
						if id.Name == "Metrics" {
							withFlag[n.Name.Name] = name
						}
					}
				}
			case *ast.CallExpr:
				if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "serveMetrics" {
					serves[name] = true
				}
			}
			return true
		})
	}
	for cmd, file := range withFlag {
		if !serves[file] {
			t.Errorf("%s (%s) has a --metrics flag but its file never calls serveMetrics", cmd, file)
		}
	}
	for _, cmd := range []string{"CollectorCmd", "IngestCmd", "SchedulerCmd", "DemoCmd"} {
		if _, ok := withFlag[cmd]; !ok {
			t.Errorf("%s has no Metrics field (--metrics)", cmd)
		}
	}
	t.Logf("commands serving /metrics, /healthz, /readyz: %v", withFlag)
}
