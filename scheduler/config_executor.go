package scheduler

import (
	"errors"
	"slices"
	"strings"

	"github.com/gpupool/gpupool/schemas"
)

// Executor names Config.Executor may list.
const (
	ExecutorNone       = "none"
	ExecutorSim        = "sim"
	ExecutorKubernetes = "kubernetes"
	ExecutorSlurm      = "slurm"
	ExecutorAgent      = "agent"
)

// Executors the service can be configured with.
var configExecutors = []string{ExecutorNone, ExecutorSim, ExecutorKubernetes, ExecutorSlurm, ExecutorAgent}

// ExecutorNames returns the executors Executor lists ("kubernetes,slurm" →
// [kubernetes slurm]), without none.
func (c Config) ExecutorNames() []string {
	var out []string
	for n := range strings.SplitSeq(c.Executor, ",") {
		if n = strings.TrimSpace(n); n != "" && n != ExecutorNone && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// UsesExecutor reports whether Executor lists name.
func (c Config) UsesExecutor(name string) bool { return slices.Contains(c.ExecutorNames(), name) }

// validateExecutors checks Executor and the sections of the executors it lists.
func (c Config) validateExecutors() []error {
	var errs []error
	names := c.ExecutorNames()
	for n := range strings.SplitSeq(c.Executor, ",") {
		if n = strings.TrimSpace(n); !slices.Contains(configExecutors, n) {
			errs = append(errs, schemas.Fieldf("executor", "%q is not one of %s (several: a comma-separated list, e.g. kubernetes,agent)",
				n, strings.Join(configExecutors, ", ")))
		}
	}
	if slices.Contains(names, ExecutorSim) && len(names) > 1 {
		errs = append(errs, schemas.Field("executor", errors.New("sim acts on the demo's simulated fleet and cannot be combined with others")))
	}
	sections := []struct {
		executor string
		validate func() error
	}{
		{ExecutorKubernetes, c.Kubernetes.Validate},
		{ExecutorSlurm, c.Slurm.Validate},
		{ExecutorAgent, c.Agent.Validate},
	}
	for _, sec := range sections {
		if slices.Contains(names, sec.executor) {
			errs = append(errs, schemas.PrefixFields(sec.executor, sec.validate()))
		}
	}
	return errs
}
