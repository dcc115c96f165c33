package dcgm

import (
	"strings"
	"testing"
)

func TestConfigValidate(t *testing.T) {
	ok := DefaultConfig()
	tests := []struct {
		name  string
		edit  func(*Config)
		field string // "" means valid
	}{
		{"default", func(*Config) {}, ""},
		{"host engine host:port", func(c *Config) { c.Address = "localhost:5555" }, ""},
		{"host engine bare host", func(c *Config) { c.Address = "10.0.0.7" }, ""},
		{"host engine tcp://", func(c *Config) { c.Address = "tcp://nv-hostengine:5555" }, ""},
		{"host engine ipv6", func(c *Config) { c.Address = "[::1]:5555" }, ""},
		{"unix socket", func(c *Config) { c.Address = "unix:///run/nvidia/dcgm.sock" }, ""},
		{"relative unix socket", func(c *Config) { c.Address = "unix://dcgm.sock" }, "address:"},
		{"bad port", func(c *Config) { c.Address = "localhost:99999" }, "address:"},
		{"other scheme", func(c *Config) { c.Address = "http://localhost:5555" }, "address:"},
		{"missing host", func(c *Config) { c.Address = ":5555" }, "address:"},
		{"white space", func(c *Config) { c.Address = "local host:5555" }, "address:"},
		{"update interval too short", func(c *Config) { c.UpdateInterval = 10 * 1e6 }, "update_interval:"},
		{"keep age too short", func(c *Config) { c.MaxKeepAge = c.UpdateInterval }, "max_keep_age:"},
		{"relative proc root", func(c *Config) { c.ProcRoot = "proc" }, "proc_root:"},
		{"fields of both generations", func(c *Config) {
			c.Fields = []string{"DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_DRAM_UTIL_RATIO", "dcgm_power_usage"}
		}, ""},
		{"unknown field", func(c *Config) { c.Fields = []string{"DCGM_FI_DEV_SM_CLOCK"} }, "fields: DCGM_FI_DEV_SM_CLOCK"},
		{"inventory field", func(c *Config) { c.Fields = []string{"DCGM_FI_DEV_GPU_UUID"} }, "fields:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.edit(&c)
			err := c.Validate()
			if tt.field == "" && err != nil {
				t.Errorf("Validate: %v", err)
			}
			if tt.field != "" && (err == nil || !strings.Contains(err.Error(), tt.field)) {
				t.Errorf("Validate = %v, want an error about %s", err, tt.field)
			}
		})
	}
}

func TestSplitAddress(t *testing.T) {
	tests := []struct{ in, network, addr string }{
		{"", "", ""},
		{"localhost:5555", "tcp", "localhost:5555"},
		{"tcp://10.0.0.1:5555", "tcp", "10.0.0.1:5555"},
		{"unix:///run/dcgm.sock", "unix", "/run/dcgm.sock"},
	}
	for _, tt := range tests {
		if n, a := splitAddress(tt.in); n != tt.network || a != tt.addr {
			t.Errorf("splitAddress(%q) = %q, %q", tt.in, n, a)
		}
	}
}
