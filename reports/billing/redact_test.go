package billing

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpupool/gpupool/reports"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestAttackReportWebhookSecretNotLogged: `gpupool reports` (the service, its
// Slack poster built from slack.webhook_url) logs a failed delivery — Slack
// unreachable, so net/http's error quotes the whole URL — without the webhook's
// secret path.
func TestAttackReportWebhookSecretNotLogged(t *testing.T) {
	const secret = "hunter2REPORTwebhook"
	s := chdbtest.Open(t)
	if _, err := store.Migrate(t.Context(), s, schemas.MigrationParams{RawTTLDays: 3650}); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // nothing listens: connection refused

	dir := t.TempDir()
	cfg := reports.DefaultConfig()
	cfg.Dir, cfg.Refresh = dir, false
	cfg.StateFile = filepath.Join(dir, "state.json")
	cfg.Slack.WebhookURL = "http://" + addr + "/services/T0001/B0002/" + secret
	cfg.Schedules = []reports.Schedule{{Name: "monthly", Cron: "0 8 1 * *", Period: "previous_month", Formats: []string{FormatJSON}, SlackChannel: "#finance"}}
	// A run missed since January: the service catches it up at once on start.
	if err := os.WriteFile(cfg.StateFile, []byte(`{"monthly": "2026-01-01T08:00:00Z"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	svc, err := NewService(cfg, s, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(60 * time.Second)
	for !strings.Contains(logs.String(), "scheduled report failed") {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("no failed delivery was logged:\n%s", logs.String())
		}
	}
	cancel()
	<-done
	out := logs.String()
	if !strings.Contains(out, addr) {
		t.Errorf("the failure does not name the host:\n%s", out)
	}
	if strings.Contains(out, secret) {
		t.Errorf("the webhook's secret path was logged:\n%s", out)
	}

	// The error itself, which a caller may log or print, is masked too, and
	// still ErrSlack.
	p, err := NewSlackPoster(cfg.Slack, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = p.Post(t.Context(), "", goldenReport(t), nil)
	if !errors.Is(err, ErrSlack) || strings.Contains(err.Error(), secret) {
		t.Errorf("Post = %v: want ErrSlack without the webhook's secret", err)
	}
}
