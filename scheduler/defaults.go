package scheduler

import (
	"time"

	"github.com/gpupool/gpupool/scheduler/executor"
	"github.com/gpupool/gpupool/schemas"
)

// DefaultConfig returns the scheduler shaped like the demo fleet (2 clusters of 8
// GPUs of each of four card types), one queue per pool open to every team, and the
// issue's policies: idle dev jobs notified after 30 min and reclaimed 15 min
// later, zombies killed after 10 min, hung jobs notified after 15 min and
// suspended 30 min later (those three in dry-run), wrong cards and
// memory_capacity findings recommended.
func DefaultConfig() Config {
	return Config{
		Listen:     "127.0.0.1:9470",
		Interval:   10 * time.Second,
		Executor:   ExecutorNone,
		Kubernetes: executor.DefaultKubernetesConfig(),
		Slurm:      executor.DefaultSlurmConfig(),
		Agent:      executor.DefaultAgentConfig(),
		Findings:   "none",
		Retry:      RetryConfig{Attempts: 3, Backoff: time.Second, MaxBackoff: 30 * time.Second},
		Model:      DefaultModel(),
		Policies:   DefaultPolicies(),

		FragmentationEvery: DefaultFragmentationEvery,
	}
}

// DefaultPolicies are the examples, each in dry-run until an operator turns
// it on. A first step counts from when the scheduler first saw the finding (never
// from the `since` a finding claims), so the wait before it is the analyzer's
// window for the kind: idle 30 min, zombie 10 min orphaned, hung 15 min flat.
func DefaultPolicies() []Policy {
	return []Policy{
		{
			Name: "dev-idle", Finding: schemas.KindIdle, Pools: []string{PoolDev}, DryRun: true, MaxActionsPerHour: 20,
			Steps: []Step{
				{Action: ActionNotify},
				{Action: ActionReclaim, After: 15 * time.Minute},
			},
			OptOutLabels: map[string]string{"gpupool.io/no-reclaim": "true"},
		},
		{
			Name: "zombie-kill", Finding: schemas.KindZombie, DryRun: true, MaxActionsPerHour: 30,
			Steps:        []Step{{Action: ActionKill}},
			OptOutLabels: map[string]string{"gpupool.io/no-kill": "true"},
		},
		{
			Name: "wrong-card", Finding: schemas.KindWrongCard,
			Steps: []Step{{Action: ActionRecommend}},
		},
		{
			// A job hung in a collective holds all its GPUs and does nothing: its
			// owner is told 15 min after it hung, and 30 min later it is suspended
			// (reclaimed and requeued held, to resume from its checkpoint).
			Name: "hung-suspend", Finding: schemas.KindHung, DryRun: true, MaxActionsPerHour: 10,
			Steps: []Step{
				{Action: ActionNotify},
				{Action: ActionReclaim, After: 30 * time.Minute},
			},
			OptOutLabels: map[string]string{"gpupool.io/no-reclaim": "true"},
		},
		{
			// Memory full, compute low: a working job, over-provisioned. Only
			// recommended (a fitting MIG profile, time-slicing share or smaller
			// card), in every pool, protected ones included: a recommendation
			// changes nothing, and validation refuses a step that would stop it.
			Name: "memory-capacity", Finding: schemas.KindMemoryCapacity,
			Steps: []Step{{Action: ActionRecommend}},
		},
	}
}
