package alerts

import (
	"bytes"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gpupool/gpupool/bus/bustest"
	"github.com/gpupool/gpupool/schemas"
)

// logBuffer collects a logger's lines from several goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// webhookSecret is the secret part of the tests' webhook URLs, as in Slack's
// https://hooks.slack.com/services/T…/B…/<secret>.
const webhookSecret = "T0001/B0002/hunter2WEBHOOKsecret"

// TestAttackWebhookSecretNotLogged: a failed delivery logs what failed and where
// (the host), never the webhook's secret path — neither when Slack cannot be
// reached (net/http's error quotes the whole URL) nor when it refuses the
// webhook (the destination is logged).
func TestAttackWebhookSecretNotLogged(t *testing.T) {
	b := bustest.Start(t)

	t.Run("unreachable", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		_ = ln.Close() // nothing listens: connection refused
		var logs logBuffer
		cfg := DefaultConfig()
		cfg.WebhookURL = "http://" + addr + "/services/" + webhookSecret
		cfg.Durable, cfg.StateBucket = "unreachable", "unreachable_state"
		m := NewMetrics(nil)
		stop := startAlerter(t, b, cfg, WithMetrics(m), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		publishAlert(t, b, idle(schemas.EventOpened, 0))
		waitFor(t, "a failed delivery", func() bool { return testutil.ToFloat64(m.retries) >= 1 })
		stop()
		out := logs.String()
		if !strings.Contains(out, "alert not delivered") || !strings.Contains(out, addr) {
			t.Fatalf("no failed delivery naming the host was logged:\n%s", out)
		}
		if strings.Contains(out, "hunter2WEBHOOKsecret") || strings.Contains(out, webhookSecret) {
			t.Errorf("the webhook's secret path was logged:\n%s", out)
		}
	})

	t.Run("refused", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "no_service", http.StatusNotFound) // a revoked webhook
		}))
		t.Cleanup(srv.Close)
		var logs logBuffer
		cfg := DefaultConfig()
		cfg.WebhookURL = srv.URL + "/services/" + webhookSecret
		cfg.Durable, cfg.StateBucket = "refused", "refused_state"
		m := NewMetrics(nil)
		stop := startAlerter(t, b, cfg, WithMetrics(m), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		publishAlert(t, b, idle(schemas.EventOpened, 0))
		waitFor(t, "a refused delivery", func() bool { return strings.Contains(logs.String(), "Slack refused an alert") })
		stop()
		out := logs.String()
		if strings.Contains(out, "hunter2WEBHOOKsecret") {
			t.Errorf("the webhook's secret path was logged:\n%s", out)
		}
	})
}
