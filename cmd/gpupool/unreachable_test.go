package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/bus"
)

// TestUnreachableNATS: every command that connects to NATS, given a URL nothing
// listens on, fails with an error that errors.Is bus.ErrUnreachable and names the
// URL and the setting (it used to wait 30 s, then say "streams: create or update
// GPUPOOL_SAMPLES: context deadline exceeded"). The collector of a real source
// has its spool to fall back on; the sim and replay sources do not.
func TestUnreachableNATS(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("nats://%s", ln.Addr())
	ln.Close() // closed: nothing listens there
	dir := t.TempDir()
	cfg := filepath.Join(dir, "gpupool.yaml")
	yaml := "bus:\n  connect_timeout: 200ms\nalerts:\n  webhook_url: http://127.0.0.1:1/hook\nscheduler:\n  listen: 127.0.0.1:0\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	trace := filepath.Join(dir, "t.jsonl")
	if err := os.WriteFile(trace, []byte(`{"type":"gpu","ts":"2026-01-01T00:00:00Z","cluster":"c","node":"n","gpu_uuid":"GPU-1"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		run  func(*Globals, context.Context) error
	}{
		{"collector sim", (&CollectorCmd{Source: "sim", Speed: 0, Duration: time.Minute}).Run},
		{"collector replay", (&CollectorCmd{Trace: trace, Speed: 0}).Run},
		{"ingest", (&IngestCmd{}).Run},
		{"analyzer", (&AnalyzerCmd{}).Run},
		{"alerts", (&AlertsCmd{}).Run},
		{"scheduler", (&SchedulerCmd{}).Run},
		{"demo", (&DemoCmd{Speed: 0, Duration: time.Minute}).Run},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &Globals{Config: cfg, DataDir: filepath.Join(dir, tc.name), LogLevel: "error", NATSURL: url}
			err := tc.run(g, t.Context())
			if !errors.Is(err, bus.ErrUnreachable) {
				t.Fatalf("err = %v, want bus.ErrUnreachable", err)
			}
			for _, want := range []string{url, "bus.url", "--nats-url"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}

// TestUnreachableNATSSpoolCarriesOn: a real source's collector, which spools while
// NATS is away, carries on past an unreachable NATS at start (here to the next
// thing that fails on a machine without GPUs).
func TestUnreachableNATSSpoolCarriesOn(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("nats://%s", ln.Addr())
	ln.Close()
	cfg := filepath.Join(t.TempDir(), "gpupool.yaml")
	if err := os.WriteFile(cfg, []byte("bus:\n  connect_timeout: 200ms\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g := &Globals{Config: cfg, DataDir: t.TempDir(), LogLevel: "error", NATSURL: url}
	err = (&CollectorCmd{Source: "auto", Speed: -1}).Run(g, t.Context())
	if errors.Is(err, bus.ErrUnreachable) || err == nil || !strings.Contains(err.Error(), "libnvidia-ml.so.1") {
		t.Fatalf("a spooling collector with NATS down: %v, want it past NATS, at the GPU source", err)
	}
}
