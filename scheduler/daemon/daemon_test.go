package daemon

import (
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpupool/gpupool/auth"
	"github.com/gpupool/gpupool/scheduler"
)

// TestExecutorsFromConfig: each executor listed is built for its source,
// and one that cannot be built says which section is at fault.
func TestExecutorsFromConfig(t *testing.T) {
	c := scheduler.DefaultConfig()
	c.Executor = "slurm"
	opts, err := executors(c, nil, slog.New(slog.DiscardHandler))
	if err != nil || len(opts) != 1 {
		t.Fatalf("slurm: %d options, %v", len(opts), err)
	}
	c.Executor, c.Agent.SecretFile = "agent", filepath.Join(t.TempDir(), "secret")
	if _, err := executors(c, nil, slog.New(slog.DiscardHandler)); err == nil || !strings.HasPrefix(err.Error(), "scheduler.agent:") {
		t.Errorf("agent without a bus: %v", err)
	}
	c.Executor, c.Kubernetes.Kubeconfig = "kubernetes", filepath.Join(t.TempDir(), "missing")
	if _, err := executors(c, nil, slog.New(slog.DiscardHandler)); err == nil || !strings.HasPrefix(err.Error(), "scheduler.kubernetes:") {
		t.Errorf("kubernetes without a kubeconfig: %v", err)
	}
}

// TestValidate refuses the demo's executor anywhere, an API without
// authentication or TLS on the network, and in memory mode what needs the store
// or the bus.
func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string // "" : valid
	}{
		{"default", func(*Config) {}, ""},
		{"memory", func(c *Config) { c.Memory = true }, ""},
		{"sim executor", func(c *Config) { c.Scheduler.Executor = scheduler.ExecutorSim }, `scheduler.executor: "sim"`},
		{"memory with store findings", func(c *Config) { c.Memory, c.Scheduler.Findings = true, "store" }, "--memory has no store"},
		{"memory with the agent", func(c *Config) { c.Memory, c.Scheduler.Executor = true, scheduler.ExecutorAgent }, "--memory has no bus"},
		{"bad auth", func(c *Config) { c.Auth.Mode = "open" }, "auth.mode:"},
		{"no auth on the network", func(c *Config) { c.Auth.Mode, c.Scheduler.Listen = auth.ModeNone, "0.0.0.0:9470" }, "scheduler.listen: auth.mode none"},
		{"no TLS on the network", func(c *Config) { c.Scheduler.Listen = ":9470" }, "scheduler.listen: listen :9470 without TLS"},
		{"insecure on the network", func(c *Config) { c.Scheduler.Listen, c.Auth.Insecure = ":9470", true }, ""},
		{"no auth on loopback", func(c *Config) { c.Auth.Mode = auth.ModeNone }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{Scheduler: scheduler.DefaultConfig(), Auth: auth.DefaultConfig()}
			tc.edit(&c)
			err := c.Validate()
			if (tc.want == "") != (err == nil) || (err != nil && !strings.HasPrefix(err.Error(), tc.want)) {
				t.Fatalf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
}
