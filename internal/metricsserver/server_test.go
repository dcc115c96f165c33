package metricsserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/crypto/bcrypt"
)

// urlLog keeps the url attribute Start logs.
type urlLog struct {
	mu  sync.Mutex
	url string
}

func (h *urlLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *urlLog) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *urlLog) WithGroup(string) slog.Handler            { return h }
func (h *urlLog) Handle(_ context.Context, r slog.Record) error {
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

// start serves a registry with one counter and returns the base URL it logged.
func start(t *testing.T, webConfig string) string {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "gpupool_test_total", Help: "A test counter."}))
	h := &urlLog{}
	if err := Start(t.Context(), Config{Listen: "127.0.0.1:0", WebConfigFile: webConfig}, reg, func() error { return nil }, slog.New(h)); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	base, ok := strings.CutSuffix(h.url, "/metrics")
	if !ok {
		t.Fatalf("Start logged url %q", h.url)
	}
	return base
}

// selfSigned writes a certificate for 127.0.0.1 and its key into dir and returns a
// pool that trusts it.
func selfSigned(t *testing.T, dir string) *x509.CertPool {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gpupool test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "cert.pem"), string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	write(t, filepath.Join(dir, "key.pem"), string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})))
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return pool
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, c *http.Client, url, user, pass string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestTLSAndBasicAuth: with a web configuration holding a certificate and a bcrypt
// basic-auth user, the endpoint speaks only TLS, and every path, the probes
// included, answers 401 without the user's password and 200 with it.
func TestTLSAndBasicAuth(t *testing.T) {
	dir := t.TempDir()
	pool := selfSigned(t, dir)
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "web.yml")
	write(t, cfg, "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\nbasic_auth_users:\n  prometheus: "+string(hash)+"\n")
	base := start(t, cfg)
	if !strings.HasPrefix(base, "https://") {
		t.Fatalf("logged %s, want an https URL", base)
	}
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	for _, path := range []string{"/metrics", "/healthz", "/readyz"} {
		if code, _ := get(t, c, base+path, "", ""); code != http.StatusUnauthorized {
			t.Errorf("%s without credentials: %d, want 401", path, code)
		}
		if code, _ := get(t, c, base+path, "prometheus", "wrong"); code != http.StatusUnauthorized {
			t.Errorf("%s with a wrong password: %d, want 401", path, code)
		}
		code, body := get(t, c, base+path, "prometheus", "s3cret")
		if code != http.StatusOK {
			t.Errorf("%s with the password: %d %q, want 200", path, code, body)
		}
		if path == "/metrics" && !strings.Contains(body, "gpupool_test_total 0") {
			t.Errorf("/metrics lacks the registry's counter:\n%s", body)
		}
	}
	plain := &http.Client{Timeout: 5 * time.Second}
	if code, _ := get(t, plain, "http://"+strings.TrimPrefix(base, "https://")+"/metrics", "prometheus", "s3cret"); code == http.StatusOK {
		t.Error("the endpoint answered plain HTTP with TLS configured")
	}
}

// TestBasicAuthWithoutTLS: basic auth alone serves plain HTTP, behind the password.
func TestBasicAuthWithoutTLS(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "web.yml")
	write(t, cfg, "basic_auth_users:\n  scraper: "+string(hash)+"\n")
	base := start(t, cfg)
	c := &http.Client{Timeout: 5 * time.Second}
	if !strings.HasPrefix(base, "http://") {
		t.Fatalf("logged %s, want an http URL", base)
	}
	if code, _ := get(t, c, base+"/metrics", "", ""); code != http.StatusUnauthorized {
		t.Errorf("without credentials: %d, want 401", code)
	}
	if code, _ := get(t, c, base+"/metrics", "scraper", "pw"); code != http.StatusOK {
		t.Errorf("with credentials: %d, want 200", code)
	}
}

// TestNoWebConfig: without a web configuration the endpoint is plain HTTP and open,
// as it always was.
func TestNoWebConfig(t *testing.T) {
	base := start(t, "")
	c := &http.Client{Timeout: 5 * time.Second}
	for _, path := range []string{"/metrics", "/healthz", "/readyz"} {
		if code, _ := get(t, c, base+path, "", ""); code != http.StatusOK {
			t.Errorf("%s: %d, want 200", path, code)
		}
	}
}

// TestBadWebConfig: a web configuration that cannot be served fails Start, naming
// the file, before anything listens.
func TestBadWebConfig(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, body string }{
		{"plain password", "basic_auth_users:\n  prometheus: s3cret\n"},
		{"missing certificate", "tls_server_config:\n  cert_file: nope.pem\n  key_file: nope.key\n"},
		{"unknown key", "basic_auth_user:\n  prometheus: x\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".yml")
			write(t, cfg, tc.body)
			err := Start(t.Context(), Config{Listen: "127.0.0.1:0", WebConfigFile: cfg}, prometheus.NewRegistry(), func() error { return nil }, slog.New(slog.DiscardHandler))
			if err == nil || !strings.Contains(err.Error(), cfg) {
				t.Fatalf("Start = %v, want an error naming %s", err, cfg)
			}
		})
	}
	if err := Start(t.Context(), Config{Listen: "127.0.0.1:0", WebConfigFile: filepath.Join(dir, "absent.yml")}, prometheus.NewRegistry(), nil, slog.New(slog.DiscardHandler)); err == nil {
		t.Fatal("Start accepted a web configuration file that does not exist")
	}
}
