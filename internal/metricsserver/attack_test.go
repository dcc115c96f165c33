package metricsserver

import (
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/crypto/bcrypt"
)

// startCfg serves a registry with one counter under cfg and returns the base URL
// Start logged, or Start's error.
func startCfg(t *testing.T, cfg Config) (string, error) {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "gpupool_test_total", Help: "A test counter."}))
	h := &urlLog{}
	if err := Start(t.Context(), cfg, reg, func() error { return nil }, slog.New(h)); err != nil {
		return "", err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	base, ok := strings.CutSuffix(h.url, "/metrics")
	if !ok {
		t.Fatalf("Start logged url %q", h.url)
	}
	return base, nil
}

// TestAttackMetricsListen: the endpoint refuses to serve plain HTTP beyond
// loopback unless told to (metrics_insecure), as the scheduler's API does; a
// web configuration with basic auth but no TLS is no exception (the password
// would cross the network in clear text).
func TestAttackMetricsListen(t *testing.T) {
	dir := t.TempDir()
	hash, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	basicOnly := filepath.Join(dir, "basic.yml")
	write(t, basicOnly, "basic_auth_users:\n  scraper: "+string(hash)+"\n")
	for _, tc := range []struct{ name, listen, web string }{
		{"every interface", ":0", ""},
		{"every IPv4 interface", "0.0.0.0:0", ""},
		{"every IPv6 interface", "[::]:0", ""},
		{"a host name", "metrics.example:0", ""},
		{"basic auth without TLS", ":0", basicOnly},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, err := startCfg(t, Config{Listen: tc.listen, WebConfigFile: tc.web})
			if !errors.Is(err, ErrInsecureListen) {
				t.Fatalf("Start on %s without TLS or metrics_insecure: served %q, err %v; want ErrInsecureListen", tc.listen, base, err)
			}
			for _, setting := range []string{tc.listen, "metrics_web_config", "tls_server_config", "metrics_insecure"} {
				if !strings.Contains(err.Error(), setting) {
					t.Errorf("error %q does not name %q", err, setting)
				}
			}
		})
	}
}

// TestMetricsListenAllowed: loopback serves plain HTTP as before; beyond
// loopback, TLS or metrics_insecure serves.
func TestMetricsListenAllowed(t *testing.T) {
	plain := &http.Client{Timeout: 5 * time.Second}
	loopbacks := []string{"127.0.0.1:0", "localhost:0"}
	if ln, err := net.Listen("tcp", "[::1]:0"); err == nil {
		ln.Close()
		loopbacks = append(loopbacks, "[::1]:0")
	}
	for _, l := range loopbacks {
		base, err := startCfg(t, Config{Listen: l})
		if err != nil {
			t.Fatalf("loopback %s: %v", l, err)
		}
		if code, _ := get(t, plain, base+"/metrics", "", ""); code != http.StatusOK {
			t.Errorf("loopback %s: /metrics %d, want 200", l, code)
		}
	}
	t.Run("metrics_insecure", func(t *testing.T) {
		base, err := startCfg(t, Config{Listen: ":0", Insecure: true})
		if err != nil {
			t.Fatal(err)
		}
		if code, _ := get(t, plain, base+"/metrics", "", ""); code != http.StatusOK {
			t.Errorf("/metrics %d, want 200", code)
		}
	})
	t.Run("TLS", func(t *testing.T) {
		dir := t.TempDir()
		pool := selfSigned(t, dir)
		web := filepath.Join(dir, "web.yml")
		write(t, web, "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n")
		base, err := startCfg(t, Config{Listen: ":0", WebConfigFile: web})
		if err != nil {
			t.Fatal(err)
		}
		_, port, _ := net.SplitHostPort(strings.TrimPrefix(base, "https://"))
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		if code, _ := get(t, c, "https://127.0.0.1:"+port+"/metrics", "", ""); code != http.StatusOK {
			t.Errorf("/metrics over TLS: %d, want 200", code)
		}
	})
}
