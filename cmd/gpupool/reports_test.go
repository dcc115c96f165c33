package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kong"

	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

// TestReportFlags: the report commands are wired into the CLI.
func TestReportFlags(t *testing.T) {
	var cli CLI
	p, err := kong.New(&cli, kong.Name("gpupool"))
	if err != nil {
		t.Fatal(err)
	}
	kctx, err := p.Parse([]string{"report", "run", "--period", "2026-11", "--format", "html,csv", "-f", "json", "-o", "/tmp/r"})
	if err != nil {
		t.Fatal(err)
	}
	r := cli.Report.Run
	if kctx.Command() != "report run" || r.Period != "2026-11" || strings.Join(r.Format, ",") != "html,csv,json" || r.Output != "/tmp/r" || r.Name != "chargeback" {
		t.Errorf("parsed %s: %+v", kctx.Command(), r)
	}
	if _, err := p.Parse([]string{"report", "run", "--period", "2026-11", "--format", "pdf"}); err == nil {
		t.Error("--format pdf accepted")
	}
	if _, err := p.Parse([]string{"reports", "--metrics", ":9472"}); err != nil {
		t.Error(err)
	}
}

// TestReportRun writes a report on demand from an empty embedded store: the
// command migrates, refreshes, builds and writes every format.
func TestReportRun(t *testing.T) {
	g := &Globals{DataDir: t.TempDir(), CHDBLib: chdbtest.LibPath(), LogLevel: "warn"}
	dir := t.TempDir()
	var out bytes.Buffer
	cmd := &ReportRunCmd{Period: "2026-11", Format: []string{"html", "csv", "json"}, Output: dir, Name: "chargeback", TimeZone: "UTC", out: &out}
	if err := cmd.Run(g, t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"chargeback-2026-11.html", "chargeback-2026-11.csv", "chargeback-2026-11.json"} {
		if !strings.Contains(out.String(), filepath.Join(dir, f)) {
			t.Errorf("output does not name %s:\n%s", f, out.String())
		}
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	if !strings.Contains(out.String(), "GPU chargeback 2026-11") {
		t.Errorf("no summary:\n%s", out.String())
	}
	bad := &ReportRunCmd{Period: "November", Format: []string{"csv"}, TimeZone: "UTC"}
	if err := bad.Run(g, t.Context()); err == nil || !strings.Contains(err.Error(), "--period") {
		t.Errorf("bad period: %v", err)
	}
}

// TestReportsService starts the scheduled service with a run missed while it was
// down: it catches up once, writes the report and counts it on /metrics.
func TestReportsService(t *testing.T) {
	data, reportsDir := t.TempDir(), t.TempDir()
	cfgFile := filepath.Join(t.TempDir(), "gpupool.yaml")
	cfg := `log_level: warn
reports:
  dir: ` + reportsDir + `
  metrics_listen: 127.0.0.1:0
  schedules:
    - {name: daily, cron: "0 6 * * *", timezone: UTC, period: previous_day, formats: [csv, json]}
`
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	// The last run was long ago: the latest missed run (this morning's, or
	// yesterday's before 06:00) is caught up on start.
	state := `{"daily": "2026-01-01T06:00:00Z"}`
	if err := os.WriteFile(filepath.Join(reportsDir, ".schedules.json"), []byte(state), 0o644); err != nil {
		t.Fatal(err)
	}
	g := &Globals{Config: cfgFile, DataDir: data, CHDBLib: chdbtest.LibPath()}
	h := &urlCatcher{}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- (&ReportsCmd{log: slog.New(h)}).Run(g, ctx) }()

	now := time.Now().UTC()
	due := time.Date(now.Year(), now.Month(), now.Day(), 6, 0, 0, 0, time.UTC)
	if now.Before(due) {
		due = due.AddDate(0, 0, -1)
	}
	want := filepath.Join(reportsDir, "daily-"+due.AddDate(0, 0, -1).Format("2006-01-02")+".json")
	waitUntil(t, "the catch-up report "+want, 2*time.Minute, func() error {
		select {
		case err := <-done:
			t.Fatalf("reports stopped: %v", err)
		default:
		}
		if _, err := os.Stat(want); err != nil {
			ents, _ := os.ReadDir(reportsDir)
			return fmt.Errorf("the directory holds %v", ents)
		}
		return nil
	})
	h.mu.Lock()
	url := h.url
	h.mu.Unlock()
	if url == "" {
		t.Fatal("no metrics endpoint logged")
	}
	var body string
	// The run's counter follows its files by a moment.
	waitUntil(t, "the run counted on /metrics", 5*time.Second, func() error {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if body = string(b); !strings.Contains(body, `gpupool_reports_runs_total{result="ok",schedule="daily"} 1`) {
			return errors.New("no successful daily run counted")
		}
		return nil
	})
	if w := `gpupool_report_last_success_timestamp_seconds{schedule="daily"}`; !strings.Contains(body, w) {
		t.Errorf("/metrics lacks %s", w)
	}
	resp, err := http.Get(strings.TrimSuffix(url, "/metrics") + "/readyz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("/readyz: %v %v", resp, err)
	}
	if resp != nil {
		resp.Body.Close()
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("reports returned %v on shutdown", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("reports did not stop with its context")
	}
}
