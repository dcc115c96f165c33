package scheduler

import (
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gpupool/gpupool/schemas"
)

// TestExecutorSections: the sections of executors not listed are not checked, and
// the names listed come back without none and duplicates.
func TestExecutorSections(t *testing.T) {
	c := testConfig()
	c.Slurm.Scontrol, c.Agent.ReplyMargin = "", 0
	if err := c.Validate(); err != nil {
		t.Fatalf("unused sections checked: %v", err)
	}
	c.Executor, c.Agent.ReplyMargin, c.Agent.SecretFile = "kubernetes, agent,none,agent", time.Second, "/run/secret"
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.ExecutorNames(), ","); got != "kubernetes,agent" {
		t.Errorf("ExecutorNames = %s", got)
	}
	if !c.UsesExecutor(ExecutorAgent) || c.UsesExecutor(ExecutorSlurm) {
		t.Error("UsesExecutor")
	}
}

func TestDefaultConfigValid(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	if _, err := New(DefaultConfig()); err != nil {
		t.Fatal(err)
	}
}

// TestValidateNamesTheField: every error line starts with the path of the field
// at fault.
func TestValidateNamesTheField(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*Config)
		want   []string
	}{
		{"unknown card in quota", func(c *Config) { c.Queues[2].Quota["B200"] = Quota{Nominal: 1} }, []string{"queues[2].quota.B200: no such card type"}},
		{"lending past nominal", func(c *Config) { c.Queues[0].Quota["H100-80GB"] = Quota{Nominal: 2, LendingLimit: ptr(3)} },
			[]string{"queues[0].quota.H100-80GB.lending_limit: 3 must be 0..2"}},
		{"negative nominal", func(c *Config) { c.Queues[1].Quota["H100-80GB"] = Quota{Nominal: -1} }, []string{"queues[1].quota.H100-80GB.nominal:"}},
		{"borrow in a pool that may not", func(c *Config) { c.Queues[2].Quota["L40S-48GB"] = Quota{Nominal: 4, BorrowingLimit: ptr(2)} },
			[]string{"queues[2].quota.L40S-48GB.borrowing_limit: pool \"infer\" may not borrow"}},
		{"unknown pool", func(c *Config) { c.Queues[3].Pool = "gaming" }, []string{"queues[3].pool: \"gaming\""}},
		{"duplicate queue", func(c *Config) { c.Queues[1].Name = "a" }, []string{"queues[1].name: \"a\" is listed twice"}},
		{"quotas past pool", func(c *Config) { c.Queues[0].Quota["H100-80GB"] = Quota{Nominal: 6} }, []string{"pools[0].capacity.H100-80GB: the nominal quotas"}},
		{"pools past clusters", func(c *Config) { c.Pools[0].Capacity["H100-80GB"] = 9 }, []string{"pools: the pools' capacities of H100-80GB add up to 9"}},
		{"protected and preemptible", func(c *Config) { c.Pools[1].Preemptible = true }, []string{"pools[1].preemptible:"}},
		{"bad priority default", func(c *Config) { c.DefaultPriorityClass = "urgent" }, []string{"default_priority_class:"}},
		{"cluster card", func(c *Config) { c.Clusters[0].Capacity["TPU"] = 4 }, []string{"clusters[0].capacity.TPU:"}},
		{"policy finding", func(c *Config) { c.Policies[0].Finding = "slow" }, []string{"policies[0].finding:"}},
		{"policy pool", func(c *Config) { c.Policies[0].Pools = []string{"nope"} }, []string{"policies[0].pools[0]:"}},
		{"kill needs a zombie", func(c *Config) { c.Policies[0].Steps[1].Action = ActionKill }, []string{"policies[0].steps[1].action: kill"}},
		{"memory capacity is only recommended", func(c *Config) { c.Policies[0].Finding = schemas.KindMemoryCapacity },
			[]string{"policies[0].steps[1].action: reclaim stops a job"}},
		{"executor", func(c *Config) { c.Executor = "ssh" }, []string{"executor:"}},
		{"executor in a list", func(c *Config) { c.Executor = "slurm, ssh" }, []string{`executor: "ssh" is not one of`}},
		{"sim with others", func(c *Config) { c.Executor = "sim,slurm" }, []string{"executor: sim"}},
		{"kubernetes mode", func(c *Config) { c.Executor, c.Kubernetes.Mode = "kubernetes", "delete" }, []string{`kubernetes.mode: "delete"`}},
		{"kubernetes context", func(c *Config) { c.Executor, c.Kubernetes.Context = "kubernetes", "prod" }, []string{"kubernetes.context:"}},
		{"kubernetes timeout", func(c *Config) { c.Executor, c.Kubernetes.RequestTimeout = "kubernetes", 0 }, []string{"kubernetes.request_timeout:"}},
		{"kubernetes namespace label", func(c *Config) { c.Executor, c.Kubernetes.NamespaceLabel = "kubernetes", "" },
			[]string{"kubernetes.namespace_label:"}},
		{"slurm commands", func(c *Config) { c.Executor, c.Slurm.Scontrol, c.Slurm.Scancel = "slurm", "", "" },
			[]string{"slurm.scontrol:", "slurm.scancel:"}},
		{"slurm timeout", func(c *Config) { c.Executor, c.Slurm.Timeout = "kubernetes,slurm", -time.Second }, []string{"slurm.timeout:"}},
		{"agent key", func(c *Config) { c.Executor = "agent" }, []string{"agent.private_key_file:"}},
		{"agent margin", func(c *Config) { c.Executor, c.Agent.SecretFile, c.Agent.ReplyMargin = "agent", "/s", 0 }, []string{"agent.reply_margin:"}},
		{"queue name with a space", func(c *Config) { c.Queues[0].Name = "team a" }, []string{`queues[0].name: "team a" has ' ' at byte 4`}},
		{"queue name of 7 MB", func(c *Config) { c.Queues[0].Name = strings.Repeat("q", 7<<20) }, []string{"queues[0].name: ", "is 7340032 bytes, longer than 63"}},
		{"queue team", func(c *Config) { c.Queues[0].Team = "nlp/x" }, []string{"queues[0].team: "}},
		{"card name", func(c *Config) { c.Cards[0].Name = "H100 80GB" }, []string{"cards[0].name: "}},
		{"interval", func(c *Config) { c.Interval = 0 }, []string{"interval:"}},
		{"idempotency ttl", func(c *Config) { c.Idempotency.TTL = -time.Hour }, []string{"idempotency.ttl: -1h0m0s must be 0"}},
		{"idempotency keys", func(c *Config) { c.Idempotency.MaxKeys = 20_000_000 }, []string{"idempotency.max_keys: 20000000 must be"}},
		{"several", func(c *Config) { c.Interval, c.Queues[0].Weight = 0, -1 }, []string{"interval:", "queues[0].weight:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testConfig()
			tt.modify(&c)
			err := c.Validate()
			if err == nil {
				t.Fatal("invalid config accepted")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.Contains(strings.SplitN(line, " ", 2)[0], ":") {
					t.Errorf("line %q does not start with a field path", line)
				}
			}
		})
	}
}

// TestModelYAML: the model reads from YAML as documented.
func TestModelYAML(t *testing.T) {
	src := `
listen: 127.0.0.1:9470
interval: 5s
executor: none
findings: none
retry: {attempts: 3, backoff: 1s, max_backoff: 30s}
cards:
  - {name: L40S-48GB, memory_gib: 48, rank: 1}
  - {name: H100-80GB, memory_gib: 80, rank: 4}
clusters:
  - name: c1
    capacity: {L40S-48GB: 8, H100-80GB: 8}
pools:
  - {name: training-exp, capacity: {H100-80GB: 8}, may_lend: true, may_borrow: true, preemptible: true, reclaim_grace: 5m, max_job_duration: 72h}
  - {name: dev, capacity: {L40S-48GB: 8}, may_lend: true, may_borrow: true, preemptible: true}
priority_classes: [{name: normal, value: 100}]
default_priority_class: normal
queues:
  - name: nlp
    pool: training-exp
    team: nlp
    cohort: shared
    weight: 2
    quota:
      H100-80GB: {nominal: 8, borrowing_limit: 2, lending_limit: 4}
  - name: dev
    pool: dev
    cohort: shared
    quota: {L40S-48GB: {nominal: 8}}
policies:
  - name: dev-idle
    finding: idle
    pools: [dev]
    dry_run: true
    max_actions_per_hour: 10
    opt_out_labels: {gpupool.io/no-reclaim: "true"}
    steps:
      - {action: notify, after: 30m}
      - {action: reclaim, after: 15m}
`
	var c Config
	dec := yaml.NewDecoder(strings.NewReader(src))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	q := c.Queues[0]
	if q.Weight != 2 || q.Quota["H100-80GB"].Nominal != 8 || *q.Quota["H100-80GB"].BorrowingLimit != 2 || *q.Quota["H100-80GB"].LendingLimit != 4 {
		t.Errorf("queue: %+v", q)
	}
	if c.Pools[0].ReclaimGrace != 5*time.Minute || c.Policies[0].Steps[1].After != 15*time.Minute {
		t.Errorf("durations: %+v %+v", c.Pools[0], c.Policies[0])
	}
}
