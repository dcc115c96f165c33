package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "gpupool.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDefaultIsValid(t *testing.T) {
	c, err := Load("")
	if err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	if c.Store.CHDB.Path != filepath.Join("gpupool-data", "chdb") || c.Bus.Embedded.DataDir != filepath.Join("gpupool-data", "nats") {
		t.Errorf("derived paths: chdb %q nats %q", c.Store.CHDB.Path, c.Bus.Embedded.DataDir)
	}
}

func TestLoadOverrides(t *testing.T) {
	p := writeConfig(t, `
data_dir: /var/lib/gpupool
ingest:
  batch_rows: 50000
  batch_age: 2s
sim:
  clusters: 3
bus:
  url: nats://n1:4222,nats://n2:4222
  streams:
    samples_max_age: 12h
`)
	c, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if c.Ingest.BatchRows != 50000 || c.Ingest.BatchAge != 2*time.Second || c.Sim.Clusters != 3 {
		t.Errorf("overrides not applied: %+v %+v", c.Ingest, c.Sim)
	}
	if c.Bus.URL != "nats://n1:4222,nats://n2:4222" || c.Bus.Streams.SamplesMaxAge != 12*time.Hour {
		t.Errorf("bus: %+v", c.Bus)
	}
	if c.Ingest.FetchMax != 1000 {
		t.Errorf("unset ingest.fetch_max lost its default: %d", c.Ingest.FetchMax)
	}
	if c.Store.CHDB.Path != "/var/lib/gpupool/chdb" {
		t.Errorf("store.chdb.path = %q, want it under data_dir", c.Store.CHDB.Path)
	}
	if c.Auth.TokensFile != "/var/lib/gpupool/auth/tokens" || c.Auth.AdminTokenFile != "/var/lib/gpupool/auth/admin.token" {
		t.Errorf("auth files %q %q, want them under data_dir", c.Auth.TokensFile, c.Auth.AdminTokenFile)
	}
}

func TestBadConfigNamesTheField(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []string
	}{
		{"unknown key", "ingest:\n  batch_rowz: 5\n", []string{"line 2", "batch_rowz"}},
		{"wrong type", "ingest:\n  batch_rows: lots\n", []string{"line 2", "lots"}},
		{"bad duration", "ingest:\n  batch_age: soon\n", []string{"line 2", "soon"}},
		{"invalid value", "ingest:\n  batch_rows: 0\n", []string{"ingest.batch_rows"}},
		{"nested invalid", "bus:\n  streams:\n    replicas: 9\n", []string{"bus.streams.replicas"}},
		{"sim field", "sim:\n  gpus_per_node: 99\n", []string{"sim.gpus_per_node"}},
		{"backend", "store:\n  backend: postgres\n", []string{"store.backend", "postgres"}},
		{"log level", "log_level: loud\n", []string{"log_level"}},
		{"not yaml", "ingest: [1, 2\n", []string{"yaml"}},
		{"scheduler quota", "scheduler:\n  queues:\n    - {name: q, pool: dev, quota: {B200: {nominal: 1}}}\n", []string{"scheduler.queues[0].quota.B200: no such card type"}},
		{"analyzer interval", "analyzer:\n  interval: 0s\n", []string{"analyzer.interval"}},
		{"auth mode", "auth:\n  mode: open\n", []string{"auth.mode"}},
		{"auth oidc group", "auth:\n  oidc:\n    groups: {ml: [root]}\n", []string{"auth.oidc.groups.ml"}},
		{"analyzer findings", "analyzer:\n  findings:\n    resolve_after: 1m\n", []string{"analyzer.findings.resolve_after"}},
		{"analyzer pool threshold", "analyzer:\n  findings:\n    pools:\n      dev:\n        idle: {window: -1m}\n", []string{"analyzer.findings.pools.dev.idle.window"}},
		{"analyzer unknown key", "analyzer:\n  findings:\n    idle_window: 1h\n", []string{"idle_window"}},
		{"analyzer two intervals", "analyzer:\n  interval: 10m\n  findings:\n    interval: 1m\n", []string{"analyzer.findings.interval"}},
		{"console refresh", "console:\n  refresh: 500ms\n  max_rows: 0\n", []string{"console.refresh: 500ms is under 1s", "console.max_rows"}},
		{"console unknown key", "console:\n  port: 9480\n", []string{"port"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeConfig(t, tt.body)
			_, err := Load(p)
			if err == nil {
				t.Fatal("bad config accepted")
			}
			msg := err.Error()
			if !strings.Contains(msg, p) {
				t.Errorf("error %q does not name the file", msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not mention %q", msg, w)
				}
			}
		})
	}
}

func TestAnalyzerSection(t *testing.T) {
	c, err := Load(writeConfig(t, `
analyzer:
  interval: 10m
  price_book: /etc/gpupool/prices.csv
  findings:
    hint_interval: 1h
    pools:
      dev:
        idle: {window: 1h}
`))
	if err != nil {
		t.Fatal(err)
	}
	a := c.Analyzer
	if a.Interval != 10*time.Minute || a.PriceBook != "/etc/gpupool/prices.csv" || a.FindingsConfig().Interval != 10*time.Minute {
		t.Errorf("analyzer: %+v", a)
	}
	if a.Findings.HintInterval != time.Hour || a.Findings.ForPool("dev").Idle.Window != time.Hour {
		t.Errorf("findings overrides lost: %+v", a.Findings)
	}
	if a.Findings.ForPool("training-exp").Idle.Window != 30*time.Minute {
		t.Errorf("other pools changed: %v", a.Findings.ForPool("training-exp").Idle.Window)
	}
}

func TestEmptyFileKeepsDefaults(t *testing.T) {
	c, err := Load(writeConfig(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	if c.Ingest.BatchRows != Default().Ingest.BatchRows {
		t.Error("empty file changed defaults")
	}
}

func TestExampleConfigLoads(t *testing.T) {
	p := filepath.Join("..", "..", "deploy", "gpupool.example.yaml")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the documented example config is missing: %v", err)
	}
	c, err := Load(p)
	if err != nil {
		t.Fatalf("deploy/gpupool.example.yaml does not load: %v", err)
	}
	// The example lists the analyzer's keys "with their defaults": keep it true.
	if want := Default().Analyzer; !reflect.DeepEqual(c.Analyzer, want) {
		t.Errorf("the example's analyzer section differs from the defaults:\n got %+v\nwant %+v", c.Analyzer, want)
	}
}

// TestFieldErrorPaths: each bad field of a configuration is a schemas.FieldError
// with its full path, found with errors.As, and the joined errors keep one path
// each.
func TestFieldErrorPaths(t *testing.T) {
	c := Default()
	c.Resolve()
	c.Bus.Streams.Replicas = 9
	c.Console.MaxRows = 0
	c.LogLevel = "loud"
	err := c.Validate()
	var fe *schemas.FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("errors.As(%v) found no FieldError", err)
	}
	var paths []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		if errors.As(e, &fe) {
			paths = append(paths, fe.Path)
		}
	}
	if got, want := strings.Join(paths, " "), "log_level bus.streams.replicas console.max_rows"; got != want {
		t.Errorf("field paths %q, want %q (error %q)", got, want, err)
	}
}
