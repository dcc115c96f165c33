package daemon

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpupool/gpupool/auth"
	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/scheduler/api"
)

// freeAddr is a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// runDaemon runs a memory-mode daemon with auth as given until the test ends,
// and returns its URL once it answers.
func runDaemon(t *testing.T, a auth.Config) string {
	t.Helper()
	cfg := Config{Scheduler: scheduler.DefaultConfig(), Auth: a, Memory: true}
	cfg.Scheduler.Listen = freeAddr(t)
	d, err := Open(t.Context(), cfg, WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
		d.Close()
	})
	url := "http://" + cfg.Scheduler.Listen
	c, _ := api.NewClient(url, nil)
	for deadline := time.Now().Add(10 * time.Second); ; {
		_, err := c.Queues(t.Context())
		if !errors.Is(err, api.ErrUnreachable) {
			return url
		}
		if time.Now().After(deadline) {
			t.Fatalf("the API never answered: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSecureByDefault: with the default auth section the daemon writes an admin
// token (0600) on its first start, refuses calls without it (401) and serves the
// token's holder; a restart keeps the token.
func TestSecureByDefault(t *testing.T) {
	dir := t.TempDir()
	a := auth.DefaultConfig()
	a.Resolve(dir)
	url := runDaemon(t, a)
	st, err := os.Stat(filepath.Join(dir, "auth", "admin.token"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("admin token: %v %v", st, err)
	}
	tok, err := auth.ClientToken("", "", a.AdminTokenFile)
	if err != nil || tok == "" {
		t.Fatalf("admin token %q: %v", tok, err)
	}
	anon, _ := api.NewClient(url, nil)
	if _, err := anon.Queues(t.Context()); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("without a token: %v, want 401", err)
	}
	admin, _ := api.NewClient(url, nil, api.WithToken(tok))
	if qs, err := admin.Queues(t.Context()); err != nil || len(qs) == 0 {
		t.Fatalf("with the admin token: %d queues, %v", len(qs), err)
	}
	runDaemon(t, a)
	if again, _ := auth.ClientToken("", "", a.AdminTokenFile); again != tok {
		t.Error("a restart changed the admin token")
	}
}

// TestModeNoneOnLoopback: auth mode none serves everyone, on loopback only.
func TestModeNoneOnLoopback(t *testing.T) {
	a := auth.DefaultConfig()
	a.Mode = auth.ModeNone
	a.Resolve(t.TempDir())
	c, _ := api.NewClient(runDaemon(t, a), nil)
	if _, err := c.Queues(t.Context()); err != nil {
		t.Fatalf("mode none: %v", err)
	}
	if _, err := os.Stat(a.AdminTokenFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("mode none wrote an admin token: %v", err)
	}
}
