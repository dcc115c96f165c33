package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCollectorRecordAndReplay records a simulated fleet to a trace, then replays
// the trace, both through the embedded NATS server.
func TestCollectorRecordAndReplay(t *testing.T) {
	dir := t.TempDir()
	g := &Globals{DataDir: filepath.Join(dir, "data"), LogLevel: "warn"}
	trace := filepath.Join(dir, "fleet.jsonl.gz")
	rec := &CollectorCmd{Source: "sim", Duration: 5 * time.Minute, Speed: 0, Record: trace}
	if err := rec.Run(g, t.Context()); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(trace)
	if err != nil || fi.Size() == 0 {
		t.Fatalf("no recording: %v", err)
	}
	play := &CollectorCmd{Trace: trace, Speed: 0}
	if err := play.Run(g, t.Context()); err != nil {
		t.Fatalf("replay: %v", err)
	}
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte("{\"type\":\"gpu\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	strict := &CollectorCmd{Trace: bad, Speed: 0, Strict: true}
	if err := strict.Run(g, t.Context()); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("strict replay of a bad trace: %v", err)
	}
}

func TestCollectorWithoutGPUs(t *testing.T) {
	g := &Globals{DataDir: t.TempDir(), LogLevel: "error"}
	err := (&CollectorCmd{Source: "auto", Speed: -1}).Run(g, t.Context())
	if err == nil || !strings.Contains(err.Error(), "libnvidia-ml.so.1") || !strings.Contains(err.Error(), "libdcgm.so.4") {
		t.Fatalf("auto source on a machine without GPUs: %v", err)
	}
}
