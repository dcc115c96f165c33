package attribution

import (
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func TestDefaultConfigValidates(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Node = "n1"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := DefaultConfig().Validate(); err == nil || !strings.HasPrefix(err.Error(), "node:") {
		t.Fatalf("default without node: %v, want a node: error", err)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"proc_root", func(c *Config) { c.ProcRoot = "" }, "proc_root:"},
		{"cluster", func(c *Config) { c.Cluster = "" }, "cluster:"},
		{"kubelet_url scheme", func(c *Config) { c.KubeletURL = "127.0.0.1:10250" }, "kubelet_url:"},
		{"kubelet_url host", func(c *Config) { c.KubeletURL = "https://" }, "kubelet_url:"},
		{"kubelet_timeout", func(c *Config) { c.KubeletURL = "https://127.0.0.1:10250"; c.KubeletTimeout = 0 }, "kubelet_timeout:"},
		{"label_keys", func(c *Config) { c.LabelKeys.Team = []string{"team", ""} }, "label_keys.team[1]:"},
		{"cache_ttl", func(c *Config) { c.CacheTTL = 0 }, "cache_ttl:"},
		{"evict_after", func(c *Config) { c.EvictAfter = -time.Second }, "evict_after:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			tt.mutate(&cfg)
			err := cfg.Validate()
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to start with %q", err, tt.want)
			}
		})
	}
}

func TestConfigYAML(t *testing.T) {
	cfg := DefaultConfig()
	doc := `
node: gpu-7
kubelet_url: https://127.0.0.1:10250
kubelet_token_file: /var/run/secrets/kubernetes.io/serviceaccount/token
kubelet_insecure_skip_verify: true
cache_ttl: 30s
label_keys:
  team: [acme.com/team]
`
	dec := yaml.NewDecoder(strings.NewReader(doc))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.CacheTTL != 30*time.Second || cfg.LabelKeys.Team[0] != "acme.com/team" || cfg.LabelKeys.Project[0] != "gpupool.io/project" {
		t.Errorf("decoded %+v", cfg)
	}
}
