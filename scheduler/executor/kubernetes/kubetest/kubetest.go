package kubetest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// Version is the kube-apiserver the tests run: k8s.io/kubernetes at the version
// tools/kube-apiserver/go.mod requires, matching gpupool's client-go v0.x (a
// test keeps the three in step).
const Version = "v1.37.2"

// NoKubeEnv, set to 1, lets the tests that need the API server skip on a
// machine without it; without it they fail, saying how to get it.
const NoKubeEnv = "GPUPOOL_TEST_NO_KUBE"

// BinEnv overrides where the kube-apiserver binary is.
const BinEnv = "GPUPOOL_KUBE_APISERVER"

// howToGet is what a test without the server tells.
const howToGet = `run "make deps" (it installs the Debian package etcd-server and builds kube-apiserver ` + Version +
	` into ~/.cache/gpupool/kube-apiserver, several minutes once; deploy/testservers/kube-apiserver.sh does it alone), or set ` +
	NoKubeEnv + "=1 to skip"

// adminToken is the static token of the admin identity; the server listens on
// loopback only and lives as long as one test.
const adminToken = "gpupool-test-admin"

// startTimeout bounds the start: etcd is ready in well under a second, the API
// server in a few seconds.
const startTimeout = 2 * time.Minute

// Binary returns the cached kube-apiserver's path: $GPUPOOL_KUBE_APISERVER, or
// $XDG_CACHE_HOME (~/.cache)/gpupool/kube-apiserver/<Version>/kube-apiserver.
func Binary() (string, error) {
	p := os.Getenv(BinEnv)
	if p == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("kubetest: no cache directory: %w", err)
		}
		p = filepath.Join(cache, "gpupool", "kube-apiserver", Version, "kube-apiserver")
	}
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("kubetest: kube-apiserver %s: %w", Version, err)
	}
	return p, nil
}

// Server is a running etcd and kube-apiserver of one test.
type Server struct {
	// Admin is the config of an identity in system:masters.
	Admin *rest.Config
	dir   string
}

// As returns a config that acts as user in groups (through impersonation by
// the admin): what the API server authorizes is that identity's RBAC alone.
func (s *Server) As(user string, groups ...string) *rest.Config {
	c := rest.CopyConfig(s.Admin)
	c.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	return c
}

// AsServiceAccount returns a config that acts as the ServiceAccount ns/name,
// with the groups the API server gives a token of it.
func (s *Server) AsServiceAccount(ns, name string) *rest.Config {
	return s.As("system:serviceaccount:"+ns+":"+name,
		"system:serviceaccounts", "system:serviceaccounts:"+ns, "system:authenticated")
}

// require finds a program, skipping under NoKubeEnv and failing otherwise.
func require(t testing.TB, find func() (string, error)) string {
	t.Helper()
	p, err := find()
	if err == nil {
		return p
	}
	if os.Getenv(NoKubeEnv) == "1" {
		t.Skipf("%v, and %s=1", err, NoKubeEnv)
	}
	t.Fatalf("no Kubernetes API server for this test: %v: %s", err, howToGet)
	return ""
}

// Start starts etcd and kube-apiserver, waits until the API server is ready
// (its RBAC roles bootstrapped), and stops both when the test ends; both die
// with the test binary.
func Start(t testing.TB) *Server {
	t.Helper()
	etcd := require(t, func() (string, error) {
		p, err := exec.LookPath("etcd")
		if err != nil {
			return "", fmt.Errorf("kubetest: etcd: %w", err)
		}
		return p, nil
	})
	kas := require(t, Binary)
	dir := t.TempDir()
	s := &Server{dir: dir}

	clientPort, peerPort := freePort(t), freePort(t)
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(clientPort)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	etcdDone := s.spawn(t, "etcd", etcd,
		"--data-dir="+filepath.Join(dir, "etcd"), "--name=default",
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL, "--log-level=warn",
		// Kueue's Workload CRD is over a megabyte, etcd's default request limit.
		"--max-request-bytes=10485760")

	ca, err := writeCerts(dir)
	if err != nil {
		t.Fatal(err)
	}
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(adminToken+`,gpupool-admin,gpupool-admin,"system:masters"`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	kasDone := s.spawn(t, "kube-apiserver", kas,
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port="+strconv.Itoa(port),
		"--tls-cert-file="+filepath.Join(dir, "serving.crt"), "--tls-private-key-file="+filepath.Join(dir, "serving.key"),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file="+filepath.Join(dir, "sa.key"),
		"--service-account-signing-key-file="+filepath.Join(dir, "sa.key"),
		"--token-auth-file="+tokens,
		"--authorization-mode=RBAC",
		"--endpoint-reconciler-type=none",
		"--service-cluster-ip-range=10.96.0.0/24",
		"--allow-privileged=true",
		"--enable-priority-and-fairness=false",
		"--profiling=false",
	)
	s.Admin = &rest.Config{
		Host:            "https://127.0.0.1:" + strconv.Itoa(port),
		BearerToken:     adminToken,
		TLSClientConfig: rest.TLSClientConfig{CAData: ca},
		QPS:             200, Burst: 400,
		Timeout: 30 * time.Second,
	}
	s.waitReady(t, etcdDone, kasDone)
	return s
}

// spawn starts a program logging to dir/<name>.log; the log is printed when the
// test fails. The returned channel closes when it exits.
func (s *Server) spawn(t testing.TB, name, bin string, args ...string) <-chan struct{} {
	t.Helper()
	logPath := filepath.Join(s.dir, name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
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
			out, _ := os.ReadFile(logPath)
			if len(out) > 8000 {
				out = out[len(out)-8000:]
			}
			t.Logf("%s log (tail):\n%s", name, out)
		}
	})
	return done
}

// waitReady polls /readyz until it answers 200: etcd reached, RBAC's default
// roles bootstrapped. Either program exiting first fails the test.
func (s *Server) waitReady(t testing.TB, etcdDone, kasDone <-chan struct{}) {
	t.Helper()
	rt, err := rest.TransportFor(s.Admin)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.After(startTimeout)
	var last string
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.Admin.Host+"/readyz", nil)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		resp, err := rt.RoundTrip(req)
		cancel()
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case <-etcdDone:
			t.Fatal("etcd exited before the API server was ready (its log follows)")
		case <-kasDone:
			t.Fatal("kube-apiserver exited before it was ready (its log follows)")
		case <-deadline:
			t.Fatalf("kube-apiserver at %s not ready after %s (last answer: %s)", s.Admin.Host, startTimeout, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// freePort is a loopback port free a moment ago (etcd takes no port 0 and
// prints nothing of the one it took).
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// writeCerts writes a CA, the serving certificate it signs for 127.0.0.1 and
// the service-account signing key into dir, and returns the CA's PEM.
func writeCerts(dir string) ([]byte, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gpupool-test-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("kubetest: CA certificate: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("kubetest: serving certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	// RSA: the service-account token signer takes RSA or ECDSA; RSA is what
	// clusters use.
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	files := map[string][]byte{
		"serving.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		"serving.key": pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		"sa.key":      pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(saKey)}),
		"ca.crt":      caPEM,
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return nil, err
		}
	}
	return caPEM, nil
}
