package scheduler

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/gpupool/gpupool/scheduler/executor"
)

// Config is the scheduler section of gpupool's configuration: the service's
// settings, the model (cards, clusters, pools, priorities, queues) and the
// policies.
type Config struct {
	// Listen is the HTTP API's address (`gpupool submit` and friends talk to it).
	Listen string `yaml:"listen"`
	// Interval is how often admission and policies run; a submit or a finished job
	// also triggers a pass.
	Interval time.Duration `yaml:"interval"`
	// Executor carries out reclaims and kills: none (record the decision; the job's
	// system is told by the job events), sim (the demo's simulated fleet), or a
	// comma-separated list of kubernetes, slurm and agent (the node agents' process
	// kills), each configured in its section below.
	Executor string `yaml:"executor"`
	// Kubernetes, Slurm and Agent configure those executors; read only when
	// Executor lists them.
	Kubernetes executor.KubernetesConfig `yaml:"kubernetes"`
	Slurm      executor.SlurmConfig      `yaml:"slurm"`
	Agent      executor.AgentConfig      `yaml:"agent"`
	// Findings is where policies read findings from: store (the findings_open
	// view) or none (only what is POSTed to /v1/findings).
	Findings string `yaml:"findings"`
	// MaxPushedFindings bounds the findings one identity (an analyzer's token or
	// certificate) may have pushed and not withdrawn; a push past it is refused
	// (429 too_many_findings). 0: DefaultMaxPushedFindings.
	MaxPushedFindings int `yaml:"max_pushed_findings"`
	// Retry bounds how an executor action that fails is retried.
	Retry RetryConfig `yaml:"retry"`
	// FragmentationEvery is how often, at most, the scheduler writes its
	// fragmentation figure (Service.Fragmentation) to the store's
	// scheduler_fragmentation table, after a pass, while it places jobs on
	// nodes; 0 never (DefaultConfig: DefaultFragmentationEvery). 10s to 10m.
	FragmentationEvery time.Duration `yaml:"fragmentation_every"`
	// FragmentationMinStranded is the fewest stranded GPUs of a cluster and
	// card type, with jobs waiting, that open a fragmentation finding (0: 1).
	FragmentationMinStranded int `yaml:"fragmentation_min_stranded"`
	// Idempotency bounds what the scheduler remembers of submits made with an
	// Idempotency-Key, so that a retry returns the first answer.
	Idempotency IdempotencyConfig `yaml:"idempotency"`
	// Model is the pool's shape; its keys sit directly under scheduler:.
	Model `yaml:",inline"`
	// Policies turn findings into actions.
	Policies []Policy `yaml:"policies"`
}

// IdempotencyConfig bounds the remembered idempotency keys (idempotency.go).
type IdempotencyConfig struct {
	// TTL is how long a key is remembered (0: DefaultIdempotencyTTL, 24h): a
	// retry after it creates a new job.
	TTL time.Duration `yaml:"ttl"`
	// MaxKeys is the most keys remembered (0: DefaultIdempotencyMaxKeys); past
	// it the oldest are forgotten first.
	MaxKeys int `yaml:"max_keys"`
}

// RetryConfig is a bounded exponential backoff.
type RetryConfig struct {
	// Attempts is the most tries of one action (1: no retry).
	Attempts int `yaml:"attempts"`
	// Backoff is the wait after the first failure; it doubles each time up to
	// MaxBackoff.
	Backoff    time.Duration `yaml:"backoff"`
	MaxBackoff time.Duration `yaml:"max_backoff"`
}

// wait returns the pause after failed try n (1-based).
func (r RetryConfig) wait(n int) time.Duration {
	d := r.Backoff
	for i := 1; i < n && d < r.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, r.MaxBackoff)
}

// Validate checks the service settings, the model and the policies. Each line of
// the error starts with the field's path under scheduler:, e.g.
// "queues[2].quota.H100-80GB: no such card type".
func (c Config) Validate() error {
	var errs []error
	if c.Listen != "" {
		if _, _, err := net.SplitHostPort(c.Listen); err != nil {
			errs = append(errs, fmt.Errorf("listen: %q is not host:port", c.Listen))
		}
	}
	if c.Interval < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("interval: %s is shorter than 100ms", c.Interval))
	}
	if e := c.FragmentationEvery; e != 0 && (e < 10*time.Second || e > maxFragmentationSpacing) {
		errs = append(errs, fmt.Errorf("fragmentation_every: %s must be 0 (never) or 10s to %s", e, maxFragmentationSpacing))
	}
	if c.FragmentationMinStranded < 0 {
		errs = append(errs, fmt.Errorf("fragmentation_min_stranded: %d is negative", c.FragmentationMinStranded))
	}
	errs = append(errs, c.validateExecutors()...)
	errs = append(errs, c.validateFindings()...)
	switch c.Findings {
	case "store", "none":
	default:
		errs = append(errs, fmt.Errorf("findings: %q is not store or none", c.Findings))
	}
	if c.Retry.Attempts < 1 || c.Retry.Attempts > 20 {
		errs = append(errs, fmt.Errorf("retry.attempts: %d must be 1..20", c.Retry.Attempts))
	}
	if c.Idempotency.TTL < 0 || c.Idempotency.TTL > 30*24*time.Hour {
		errs = append(errs, fmt.Errorf("idempotency.ttl: %s must be 0 (the default, %s) to 720h", c.Idempotency.TTL, DefaultIdempotencyTTL))
	}
	if c.Idempotency.MaxKeys < 0 || c.Idempotency.MaxKeys > 10_000_000 {
		errs = append(errs, fmt.Errorf("idempotency.max_keys: %d must be 0 (the default, %d) to 10000000", c.Idempotency.MaxKeys, DefaultIdempotencyMaxKeys))
	}
	if c.Retry.Backoff < 0 || c.Retry.MaxBackoff < c.Retry.Backoff {
		errs = append(errs, fmt.Errorf("retry: backoff %s must be ≥ 0 and at most max_backoff %s", c.Retry.Backoff, c.Retry.MaxBackoff))
	}
	errs = append(errs, c.Model.Validate(), validatePolicies(c.Policies, c.Model))
	return errors.Join(errs...)
}
