package executor

import (
	"strings"
	"testing"
	"time"
)

// TestConfigValidate checks each executor's configuration: the defaults pass (the
// agent's once it has a secret file), and each bad field is named in the error.
func TestConfigValidate(t *testing.T) {
	k8s := func(edit func(*KubernetesConfig)) func() error {
		return func() error {
			c := DefaultKubernetesConfig()
			edit(&c)
			return c.Validate()
		}
	}
	slurm := func(edit func(*SlurmConfig)) func() error {
		return func() error {
			c := DefaultSlurmConfig()
			edit(&c)
			return c.Validate()
		}
	}
	agent := func(edit func(*AgentConfig)) func() error {
		return func() error {
			c := DefaultAgentConfig()
			c.PrivateKeyFile = "/etc/gpupool/scheduler.key"
			edit(&c)
			return c.Validate()
		}
	}
	for _, tc := range []struct {
		name     string
		validate func() error
		field    string // "" when it must pass
	}{
		{"kubernetes default", k8s(func(*KubernetesConfig) {}), ""},
		{"kubernetes kueue_workload", k8s(func(c *KubernetesConfig) { c.Mode = KubernetesModeKueueWorkload }), ""},
		{"kubernetes suspend_job", k8s(func(c *KubernetesConfig) { c.Mode = KubernetesModeSuspendJob }), ""},
		{"kubernetes evict", k8s(func(c *KubernetesConfig) { c.Mode = KubernetesModeEvict }), ""},
		{"kubernetes unknown mode", k8s(func(c *KubernetesConfig) { c.Mode = "job-suspend" }), "mode"},
		{"kubernetes no kueue version", k8s(func(c *KubernetesConfig) { c.KueueVersion = "" }), "kueue_version"},
		{"kubernetes context without kubeconfig", k8s(func(c *KubernetesConfig) { c.Context = "prod" }), "context"},
		{"kubernetes negative timeout", k8s(func(c *KubernetesConfig) { c.RequestTimeout = -time.Second }), "request_timeout"},
		{"kubernetes job label without namespace label", k8s(func(c *KubernetesConfig) { c.NamespaceLabel = "" }), "namespace_label"},
		{"kubernetes namespace without team", k8s(func(c *KubernetesConfig) { c.Namespaces = map[string]NamespaceOwner{"ml": {Queue: "a"}} }), "namespaces.ml.team"},
		{"slurm default", slurm(func(*SlurmConfig) {}), ""},
		{"slurm account mapped to nothing", slurm(func(c *SlurmConfig) { c.Accounts = map[string]string{"nlp": ""} }), "accounts.nlp"},
		{"slurm no scontrol", slurm(func(c *SlurmConfig) { c.Scontrol = "" }), "scontrol"},
		{"slurm no scancel", slurm(func(c *SlurmConfig) { c.Scancel = "" }), "scancel"},
		{"slurm zero timeout", slurm(func(c *SlurmConfig) { c.Timeout = 0 }), "timeout"},
		{"agent with a private key", agent(func(*AgentConfig) {}), ""},
		{"agent with a secret file", agent(func(c *AgentConfig) { c.PrivateKeyFile, c.SecretFile = "", "/etc/gpupool/agent.secret" }), ""},
		{"agent neither key nor secret", agent(func(c *AgentConfig) { c.PrivateKeyFile = "" }), "private_key_file"},
		{"agent both key and secret", agent(func(c *AgentConfig) { c.SecretFile = "/etc/gpupool/agent.secret" }), "private_key_file and secret_file"},
		{"agent no margin", agent(func(c *AgentConfig) { c.ReplyMargin = 0 }), "reply_margin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.validate()
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tc.field != "" && err == nil:
				t.Fatalf("Validate() = nil, want an error naming %s", tc.field)
			case tc.field != "" && !strings.HasPrefix(err.Error(), tc.field+":"):
				t.Fatalf("Validate() = %q, want it to start with %q", err, tc.field+":")
			}
		})
	}
}
