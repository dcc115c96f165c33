package sim

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*Config)
		// want is the field each line of the error must start with; "" = valid.
		want []string
	}{
		{"default with start", func(*Config) {}, nil},
		{"no start", func(c *Config) { c.Start = time.Time{} }, []string{"start:"}},
		{"no clusters", func(c *Config) { c.Clusters = 0 }, []string{"clusters:"}},
		{"too many nodes", func(c *Config) { c.NodesPerCluster = 1001 }, []string{"nodes_per_cluster:"}},
		{"no gpus", func(c *Config) { c.GPUsPerNode = 0 }, []string{"gpus_per_node:"}},
		{"tick zero", func(c *Config) { c.Tick = 0 }, []string{"tick:"}},
		{"tick too long", func(c *Config) { c.Tick = 2 * time.Hour }, []string{"tick:"}},
		{"negative load", func(c *Config) { c.Load = -0.1 }, []string{"load:"}},
		{"several", func(c *Config) { c.Clusters, c.GPUsPerNode = -1, 17 }, []string{"clusters:", "gpus_per_node:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Start = testStart
			tt.modify(&cfg)
			err := cfg.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want an error naming %v", tt.want)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tt.want) {
				t.Fatalf("Validate() = %q, want %d lines", err, len(tt.want))
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(lines[i], w) {
					t.Errorf("line %d = %q, want it to start with %q", i, lines[i], w)
				}
			}
			if _, nerr := New(cfg); nerr == nil || !strings.Contains(nerr.Error(), lines[0]) {
				t.Errorf("New() = %v, want it to carry %q", nerr, lines[0])
			}
		})
	}
}

func TestDefaultConfigNeedsStart(t *testing.T) {
	_, err := New(DefaultConfig())
	if err == nil || !strings.Contains(err.Error(), "start:") {
		t.Fatalf("New(DefaultConfig()) = %v, want an error about start", err)
	}
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) {
		t.Errorf("error %v does not wrap the per-field errors", err)
	}
}
