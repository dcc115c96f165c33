package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
	if _, err := Load(p); err != nil {
		t.Fatalf("deploy/gpupool.example.yaml does not load: %v", err)
	}
}
