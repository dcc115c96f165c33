package scheduler

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
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

// Kubernetes modes: how a reclaimed pod's GPUs are freed.
const (
	// ModeAuto deactivates the Kueue Workload when there is one, else suspends the
	// Job, else evicts the pod.
	ModeAuto = "auto"
	// ModeSuspendJob suspends the owning Job (spec.suspend); a resume unsuspends it.
	ModeSuspendJob = "suspend_job"
	// ModeKueueWorkload deactivates the Kueue Workload (spec.active=false).
	ModeKueueWorkload = "kueue_workload"
	// ModeEvict evicts the pod; its controller recreates it (nothing to resume).
	ModeEvict = "evict"
)

// KubernetesExecutorConfig is scheduler.kubernetes: how Kubernetes jobs (keys
// k8s/<namespace>/<pod uid>) are stopped and resumed, and which labels of a job
// submitted to the scheduler name the Kubernetes object that runs it.
type KubernetesExecutorConfig struct {
	// Kubeconfig is the kubeconfig file; empty: the in-cluster service account.
	Kubeconfig string `yaml:"kubeconfig"`
	// Context is the kubeconfig context; empty: its current one.
	Context string `yaml:"context"`
	// Mode is auto, suspend_job, kueue_workload or evict.
	Mode string `yaml:"mode"`
	// KueueVersion is the kueue.x-k8s.io API version (v1beta1; v1beta2 on Kueue 0.15+).
	KueueVersion string `yaml:"kueue_version"`
	// RequestTimeout bounds each API request.
	RequestTimeout time.Duration `yaml:"request_timeout"`
	// NamespaceLabel, JobLabel and WorkloadLabel are the labels of a job submitted
	// to the scheduler that name its namespace, batch Job and Kueue Workload; a job
	// with JobLabel or WorkloadLabel is stopped and resumed through Kubernetes.
	// Empty: no such mapping.
	NamespaceLabel string `yaml:"namespace_label"`
	JobLabel       string `yaml:"job_label"`
	WorkloadLabel  string `yaml:"workload_label"`
}

// SlurmExecutorConfig is scheduler.slurm: how Slurm jobs (keys
// slurm/<cluster>/<id>) are requeued, cancelled and released.
type SlurmExecutorConfig struct {
	// Scontrol and Scancel are the commands: a path, or a name looked up on PATH.
	Scontrol string `yaml:"scontrol"`
	Scancel  string `yaml:"scancel"`
	// Timeout bounds each command.
	Timeout time.Duration `yaml:"timeout"`
	// Cluster, when set, is the one Slurm cluster acted on; other clusters' jobs
	// are refused.
	Cluster string `yaml:"cluster"`
	// RequeueHold requeues with a hold (scontrol requeuehold): the job stays
	// pending until the scheduler admits it again and releases it.
	RequeueHold bool `yaml:"requeue_hold"`
	// JobIDLabel is the label of a job submitted to the scheduler that holds its
	// Slurm job ID; such a job is stopped and released through Slurm. Empty: no
	// such mapping.
	JobIDLabel string `yaml:"job_id_label"`
}

// AgentExecutorConfig is scheduler.agent: processes are killed through the node
// agents, over the bus (bus.url).
type AgentExecutorConfig struct {
	// SecretFile holds the secret shared with the node agents (at least 16 bytes).
	SecretFile string `yaml:"secret_file"`
	// Cluster is the cluster of a target that names none.
	Cluster string `yaml:"cluster"`
	// ReplyMargin is how much longer than the grace to wait for an agent's answer.
	ReplyMargin time.Duration `yaml:"reply_margin"`
}

// DefaultKubernetesExecutorConfig returns in-cluster, auto, Kueue v1beta1, 30s
// requests, and the gpupool.io/ mapping labels.
func DefaultKubernetesExecutorConfig() KubernetesExecutorConfig {
	return KubernetesExecutorConfig{
		Mode: ModeAuto, KueueVersion: "v1beta1", RequestTimeout: 30 * time.Second,
		NamespaceLabel: "gpupool.io/k8s-namespace", JobLabel: "gpupool.io/k8s-job", WorkloadLabel: "gpupool.io/kueue-workload",
	}
}

// DefaultSlurmExecutorConfig returns scontrol and scancel from PATH, 30s each,
// no hold, and the gpupool.io/slurm-job-id mapping label.
func DefaultSlurmExecutorConfig() SlurmExecutorConfig {
	return SlurmExecutorConfig{Scontrol: "scontrol", Scancel: "scancel", Timeout: 30 * time.Second, JobIDLabel: "gpupool.io/slurm-job-id"}
}

// DefaultAgentExecutorConfig returns a 20s reply margin and no secret file.
func DefaultAgentExecutorConfig() AgentExecutorConfig {
	return AgentExecutorConfig{ReplyMargin: 20 * time.Second}
}

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
			errs = append(errs, fmt.Errorf("executor: %q is not one of %s (several: a comma-separated list, e.g. kubernetes,agent)",
				n, strings.Join(configExecutors, ", ")))
		}
	}
	if slices.Contains(names, ExecutorSim) && len(names) > 1 {
		errs = append(errs, errors.New("executor: sim acts on the demo's simulated fleet and cannot be combined with others"))
	}
	if slices.Contains(names, ExecutorKubernetes) {
		k := c.Kubernetes
		switch k.Mode {
		case ModeAuto, ModeSuspendJob, ModeKueueWorkload, ModeEvict:
		default:
			errs = append(errs, fmt.Errorf("kubernetes.mode: %q is not one of %s, %s, %s, %s", k.Mode, ModeAuto, ModeSuspendJob, ModeKueueWorkload, ModeEvict))
		}
		if k.KueueVersion == "" {
			errs = append(errs, errors.New("kubernetes.kueue_version: empty (v1beta1, or v1beta2 on Kueue 0.15 and later)"))
		}
		if k.RequestTimeout <= 0 {
			errs = append(errs, fmt.Errorf("kubernetes.request_timeout: %s must be positive", k.RequestTimeout))
		}
		if k.Context != "" && k.Kubeconfig == "" {
			errs = append(errs, errors.New("kubernetes.context: set only with kubernetes.kubeconfig (the in-cluster config has no contexts)"))
		}
		if k.NamespaceLabel == "" && (k.JobLabel != "" || k.WorkloadLabel != "") {
			errs = append(errs, errors.New("kubernetes.namespace_label: needed with job_label or workload_label (Jobs and Workloads are namespaced)"))
		}
	}
	if slices.Contains(names, ExecutorSlurm) {
		s := c.Slurm
		if s.Scontrol == "" {
			errs = append(errs, errors.New("slurm.scontrol: empty (a path, or a name on PATH)"))
		}
		if s.Scancel == "" {
			errs = append(errs, errors.New("slurm.scancel: empty (a path, or a name on PATH)"))
		}
		if s.Timeout <= 0 {
			errs = append(errs, fmt.Errorf("slurm.timeout: %s must be positive", s.Timeout))
		}
	}
	if slices.Contains(names, ExecutorAgent) {
		a := c.Agent
		if a.SecretFile == "" {
			errs = append(errs, errors.New("agent.secret_file: empty (the secret shared with the node agents signs each command)"))
		}
		if a.ReplyMargin <= 0 {
			errs = append(errs, fmt.Errorf("agent.reply_margin: %s must be positive", a.ReplyMargin))
		}
	}
	return errs
}
