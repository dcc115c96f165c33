package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpupool/gpupool/analyzer/findings"
	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/bus/bustest"
	"github.com/gpupool/gpupool/reports/alerts"
	"github.com/gpupool/gpupool/schemas"
)

// TestAlertsCommand runs `gpupool alerts` against a real NATS server and a local
// HTTP server playing Slack's incoming webhook: a finding the analyzer publishes
// reaches Slack once, even when the command restarts and the message is still in
// the stream; the restarted command posts the next finding, and only that.
func TestAlertsCommand(t *testing.T) {
	b := bustest.Start(t)
	var (
		mu    sync.Mutex
		posts []string
	)
	slack := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		posts = append(posts, string(body))
		mu.Unlock()
		_, _ = w.Write([]byte("ok"))
	}))
	defer slack.Close()

	dir := t.TempDir()
	cfg := filepath.Join(dir, "gpupool.yaml")
	yaml := "bus:\n  url: " + b.URL + "\nalerts:\n  webhook_url: " + slack.URL + "/hooks/T/B/X\n  channel_interval: 0s\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	seen := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	f := schemas.Finding{
		ID: "f1", Kind: schemas.KindIdle, State: schemas.StateOpen, Episode: 1, Severity: schemas.SeverityWarning,
		Cluster: "c1", Node: "node-3", Job: "notebook-42", Team: "vision", Pool: "dev", Card: "H100-80GB",
		GPUUUIDs: []string{"GPU-1"}, FirstSeen: seen, LastSeen: seen, UpdatedAt: seen,
		Evidence: map[string]float64{"active_fraction": 0.01, "window_minutes": 30}, WasteGPUHours: 1.5, WasteCost: 6.3, Currency: "USD",
	}
	publish := func(f schemas.Finding) {
		t.Helper()
		data, err := schemas.EncodeFindingMessage(&schemas.FindingMessage{Event: schemas.EventOpened, Finding: f})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.JS.Publish(t.Context(), findings.Subject(f.Kind), data); err != nil {
			t.Fatal(err)
		}
	}
	publish(f)

	count := func() int { mu.Lock(); defer mu.Unlock(); return len(posts) }
	// posted holds once Slack has n posts and the command is done with every
	// message in the stream: each delivered to it and acknowledged, none held for
	// a retry, so nothing more will be posted.
	posted := func(n int) func() error {
		return func() error {
			if c := count(); c < n {
				return fmt.Errorf("%d posts", c)
			}
			st, err := b.JS.Stream(t.Context(), bus.StreamFindings)
			if err != nil {
				return err
			}
			cons, err := b.JS.Consumer(t.Context(), bus.StreamFindings, alerts.DefaultConfig().Durable)
			if err != nil {
				return err
			}
			ci, err := cons.Info(t.Context())
			if err != nil {
				return err
			}
			if last := st.CachedInfo().State.LastSeq; ci.NumPending != 0 || ci.NumAckPending != 0 || ci.AckFloor.Stream != last {
				return fmt.Errorf("consumer at %d of %d, %d pending, %d unacknowledged", ci.AckFloor.Stream, last, ci.NumPending, ci.NumAckPending)
			}
			return nil
		}
	}
	run := func(what string, check func() error) {
		t.Helper()
		g := &Globals{Config: cfg, DataDir: filepath.Join(dir, "data"), LogLevel: "error"}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- (&AlertsCmd{}).Run(g, ctx) }()
		waitUntil(t, what, 30*time.Second, func() error {
			select {
			case err := <-done:
				t.Fatalf("alerts stopped: %v", err)
			default:
			}
			return check()
		})
		cancel()
		if err := <-done; err != nil && err != context.Canceled {
			t.Fatalf("alerts: %v", err)
		}
	}
	run("the first post", posted(1))
	mu.Lock()
	first := posts[0]
	mu.Unlock()
	var msg map[string]any
	if err := json.Unmarshal([]byte(first), &msg); err != nil {
		t.Fatalf("not JSON: %v: %s", err, first)
	}
	for _, want := range []string{"notebook-42", "vision", "node-3"} {
		if !strings.Contains(first, want) {
			t.Errorf("the Slack message does not mention %q: %s", want, first)
		}
	}
	// A restart finds the finding delivered already: nothing is posted again, and
	// the next finding is.
	next := f
	next.ID, next.Job = "f2", "notebook-43"
	publish(next)
	run("the next finding's post", posted(2))
	if n := count(); n != 2 {
		t.Fatalf("%d posts after a restart, want 2 (the first finding once, then the next):\n%s", n, strings.Join(posts, "\n"))
	}
	if !strings.Contains(posts[1], "notebook-43") {
		t.Errorf("the restarted command posted again instead of the next finding: %s", posts[1])
	}
}

// TestAlertsNeedsDestination: without a Slack destination the command says what to
// configure.
func TestAlertsNeedsDestination(t *testing.T) {
	g := &Globals{DataDir: t.TempDir(), LogLevel: "error"}
	err := (&AlertsCmd{}).Run(g, t.Context())
	if err == nil || !strings.Contains(err.Error(), "alerts.webhook_url") {
		t.Fatalf("got %v, want an error naming alerts.webhook_url", err)
	}
}
