package attribution

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const (
	testNode    = "gpu-node-a"
	testCluster = "east-1"
	testToken   = "s3cr3t-token"
	// testBootMs is btime in testdata/proc/stat, in ms.
	testBootMs = 1767225600 * 1000
)

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// testConfig returns a configuration reading testdata/proc, without kubelet or
// mapping file.
func testConfig() Config {
	cfg := DefaultConfig()
	cfg.ProcRoot = "testdata/proc"
	cfg.Node = testNode
	cfg.Cluster = testCluster
	return cfg
}

// kubeletServer is a fake kubelet answering /pods with testdata/kubelet/pods.json
// to requests bearing testToken.
type kubeletServer struct {
	srv       *httptest.Server
	caFile    string
	tokenFile string
	requests  atomic.Int64
	// fail, when set, makes the server answer 503.
	fail atomic.Bool
}

func newKubeletServer(t *testing.T) *kubeletServer {
	t.Helper()
	body, err := os.ReadFile("testdata/kubelet/pods.json")
	if err != nil {
		t.Fatal(err)
	}
	k := &kubeletServer{}
	k.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k.requests.Add(1)
		switch {
		case r.URL.Path != "/pods":
			http.NotFound(w, r)
		case r.Header.Get("Authorization") != "Bearer "+testToken:
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
		case k.fail.Load():
			http.Error(w, "busy", http.StatusServiceUnavailable)
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(body)
		}
	}))
	t.Cleanup(k.srv.Close)
	dir := t.TempDir()
	k.caFile = filepath.Join(dir, "ca.crt")
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: k.srv.Certificate().Raw})
	if err := os.WriteFile(k.caFile, ca, 0o600); err != nil {
		t.Fatal(err)
	}
	k.tokenFile = filepath.Join(dir, "token")
	if err := os.WriteFile(k.tokenFile, []byte(testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return k
}

// configure points cfg at the fake kubelet, verifying its certificate with the CA
// file.
func (k *kubeletServer) configure(cfg *Config) {
	cfg.KubeletURL = k.srv.URL
	cfg.KubeletCAFile = k.caFile
	cfg.KubeletTokenFile = k.tokenFile
}

// copyProc copies testdata/proc/stat and the given PIDs' directories into a temp
// tree the test may change, and returns its root.
func copyProc(t *testing.T, pids ...string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "proc")
	copyFile(t, "testdata/proc/stat", filepath.Join(root, "stat"))
	for _, pid := range pids {
		src := filepath.Join("testdata/proc", pid)
		if err := os.MkdirAll(filepath.Join(root, pid), 0o755); err != nil {
			t.Fatal(err)
		}
		ents, err := os.ReadDir(src)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if e.Type()&os.ModeSymlink != 0 {
				target, err := os.Readlink(filepath.Join(src, e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(target, filepath.Join(root, pid, e.Name())); err != nil {
					t.Fatal(err)
				}
				continue
			}
			copyFile(t, filepath.Join(src, e.Name()), filepath.Join(root, pid, e.Name()))
		}
	}
	return root
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
