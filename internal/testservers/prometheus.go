package testservers

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// NoPrometheusEnv, set to 1, lets the tests that need promtool or Prometheus skip
// on a machine without them; without it they fail, saying how to install them.
const NoPrometheusEnv = "GPUPOOL_TEST_NO_PROMETHEUS"

// howToGetPrometheus is what a test without Prometheus tells.
const howToGetPrometheus = `run "make deps" (it installs the Debian package prometheus) or "apt-get install prometheus", or set ` + NoPrometheusEnv + "=1 to skip"

// require returns the path of the program name on PATH, skipping the test when
// NoPrometheusEnv opts out and failing it otherwise.
func require(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if os.Getenv(NoPrometheusEnv) == "1" {
		t.Skipf("%s not found and %s=1", name, NoPrometheusEnv)
	}
	t.Fatalf("%s not found: %s", name, howToGetPrometheus)
	return ""
}

// Promtool returns promtool's path (see require).
func Promtool(t testing.TB) string {
	t.Helper()
	return require(t, "promtool")
}

// startTimeout bounds a server's start; Prometheus is ready in about a second.
const startTimeout = time.Minute

// Prometheus is a Prometheus server of one test.
type Prometheus struct {
	// URL is its HTTP API's base, http://127.0.0.1:port.
	URL string
}

// StartPrometheus starts Prometheus scraping each of targets (host:port, path
// /metrics) under job every interval, on a free loopback port with its storage in
// a temporary directory; it stops when the test ends, and dies with the test binary.
func StartPrometheus(t testing.TB, job string, targets []string, interval time.Duration) *Prometheus {
	t.Helper()
	bin := require(t, "prometheus")
	dir := t.TempDir()
	var tgts []string
	for _, a := range targets {
		tgts = append(tgts, fmt.Sprintf("%q", a))
	}
	cfg := fmt.Sprintf("global:\n  scrape_interval: %s\n  scrape_timeout: %[1]s\n  evaluation_interval: %[1]s\nscrape_configs:\n  - job_name: %q\n    static_configs:\n      - targets: [%s]\n",
		interval, job, strings.Join(tgts, ", "))
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	logf, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); _ = logf.Close(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			out, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
			t.Logf("prometheus log:\n%s", out)
		}
	})
	p := &Prometheus{URL: "http://" + addr}
	// Ready when its API answers; a Prometheus that exits first fails the test.
	deadline := time.After(startTimeout)
	for {
		if resp, err := http.Get(p.URL + "/-/ready"); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		select {
		case <-done:
			out, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
			t.Fatalf("prometheus exited before it was ready:\n%s", out)
		case <-deadline:
			t.Fatalf("prometheus on %s not ready after %s", addr, startTimeout)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Sample is one series of an instant query's answer.
type Sample struct {
	Metric map[string]string
	Value  string
}

// Query runs an instant PromQL query.
func (p *Prometheus) Query(ctx context.Context, q string) ([]Sample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/api/v1/query?query="+url.QueryEscape(q), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("query %q: %s: %w", q, body, err)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("query %q: %s", q, r.Error)
	}
	out := make([]Sample, 0, len(r.Data.Result))
	for _, s := range r.Data.Result {
		out = append(out, Sample{Metric: s.Metric, Value: fmt.Sprint(s.Value[1])})
	}
	return out, nil
}

// WaitFor queries q until it returns at least one series, and returns them; the
// test fails if its context ends first.
func (p *Prometheus) WaitFor(t testing.TB, q string) []Sample {
	t.Helper()
	var last error
	for {
		s, err := p.Query(t.Context(), q)
		if err == nil && len(s) > 0 {
			return s
		}
		if err != nil {
			last = err
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("%s never answered a series (last error %v)", q, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// freeAddr returns a loopback host:port that was free a moment ago.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
