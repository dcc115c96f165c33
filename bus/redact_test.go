package bus_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/bus/bustest"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestAttackNATSPasswordNotLogged: a NATS URL with a password (or a token as its
// user) that cannot be reached is reported, in Open's error and in the log line
// of an offline start, by its host and port without the secret.
func TestAttackNATSPasswordNotLogged(t *testing.T) {
	const secret = "hunter2NATSsecret"
	port := bustest.FreePort(t) // closed: nothing listens there
	for _, url := range []string{
		fmt.Sprintf("nats://gpupool:%s@127.0.0.1:%d", secret, port),
		fmt.Sprintf("nats://%s@127.0.0.1:%d", secret, port),
	} {
		cfg := bus.DefaultConfig()
		cfg.URL = url
		cfg.ConnectTimeout = 300 * time.Millisecond
		var logs lockedBuffer
		log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		c, err := bus.Open(t.Context(), cfg, "test-secret", log)
		if err == nil {
			c.Close()
			t.Fatal("Open of a closed port succeeded")
		}
		if strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), fmt.Sprint(port)) {
			t.Errorf("error %q: want the host and port without the secret", err)
		}
		off, err := bus.Open(t.Context(), cfg, "test-secret-offline", log, bus.Offline(true))
		if err != nil {
			t.Fatalf("Offline: %v", err)
		}
		if w := off.Where(); strings.Contains(w, secret) {
			t.Errorf("Where() = %q shows the secret", w)
		}
		off.Close()
		out := logs.String()
		if !strings.Contains(out, "NATS unreachable at start") {
			t.Fatalf("the offline start was not logged:\n%s", out)
		}
		if strings.Contains(out, secret) {
			t.Errorf("the NATS secret was logged:\n%s", out)
		}
	}
}
