package executor

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// The executors' configurations live here, beside the interface, rather than in
// each executor's package: the scheduler's configuration embeds them as they are
// (one vocabulary from the YAML file to the executor), and this package imports
// neither client-go nor NATS.

// Kubernetes modes: how a reclaimed pod's GPUs are freed (KubernetesConfig.Mode).
const (
	// KubernetesModeAuto deactivates the Kueue Workload when there is one, else
	// suspends the Job, else evicts the pod.
	KubernetesModeAuto = "auto"
	// KubernetesModeKueueWorkload is auto, with a Workload looked up for every pod
	// (for clusters where Kueue manages jobs without a queue-name label).
	KubernetesModeKueueWorkload = "kueue_workload"
	// KubernetesModeSuspendJob suspends the owning Job (spec.suspend), else evicts
	// the pod; Kueue is never touched (no RBAC on workloads needed).
	KubernetesModeSuspendJob = "suspend_job"
	// KubernetesModeEvict evicts the pod; its controller recreates it (nothing to
	// resume).
	KubernetesModeEvict = "evict"
)

// KubernetesConfig is scheduler.kubernetes: how Kubernetes jobs (keys
// k8s/<namespace>/<pod uid>) are stopped and resumed, and which labels of a job
// submitted to the scheduler name the Kubernetes object that runs it.
type KubernetesConfig struct {
	// Kubeconfig is the kubeconfig file; empty: the in-cluster service account.
	Kubeconfig string `yaml:"kubeconfig"`
	// Context is the kubeconfig context; empty: its current one.
	Context string `yaml:"context"`
	// Mode is auto, kueue_workload, suspend_job or evict.
	Mode string `yaml:"mode"`
	// KueueVersion is the kueue.x-k8s.io API version Workloads are read and patched
	// through (v1beta1; v1beta2 on Kueue 0.15 and later).
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
	// Namespaces maps each namespace whose jobs gpupool may act on to the team
	// (and queue or pool) that owns it. The scheduler resolves a Kubernetes job's
	// owner by the namespace the API server has it in, never by a finding's or a
	// label's claim: a job in a namespace missing here is nobody's, and nothing
	// destructive is done to it.
	Namespaces map[string]NamespaceOwner `yaml:"namespaces"`
	// SharedResources maps a sharing mode (timeslice, mps) to the extended
	// resource the cluster's device plugin offers shared GPUs as (the NVIDIA
	// device plugin's time-slicing and MPS, with renameByDefault:
	// nvidia.com/gpu.shared). A job placed on a fraction of a GPU is resumed
	// only if its pods ask for its mode's resource; a mode not listed is not
	// checked.
	SharedResources map[string]string `yaml:"shared_resources"`
}

// NamespaceOwner is who owns a namespace's jobs.
type NamespaceOwner struct {
	Team string `yaml:"team"`
	// Queue, when set, is the scheduler queue its jobs count against (and so
	// their pool); else Pool, when set, with the team's queue in it.
	Queue string `yaml:"queue"`
	Pool  string `yaml:"pool"`
}

// DefaultKubernetesConfig returns in-cluster, auto, Kueue v1beta1, 30s requests,
// and the gpupool.io/ mapping labels.
func DefaultKubernetesConfig() KubernetesConfig {
	return KubernetesConfig{
		Mode: KubernetesModeAuto, KueueVersion: "v1beta1", RequestTimeout: 30 * time.Second,
		NamespaceLabel: "gpupool.io/k8s-namespace", JobLabel: "gpupool.io/k8s-job", WorkloadLabel: "gpupool.io/kueue-workload",
		SharedResources: map[string]string{"timeslice": "nvidia.com/gpu.shared", "mps": "nvidia.com/gpu.shared"},
	}
}

// Validate checks the configuration; each error names its field.
func (c KubernetesConfig) Validate() error {
	var errs []error
	switch c.Mode {
	case KubernetesModeAuto, KubernetesModeKueueWorkload, KubernetesModeSuspendJob, KubernetesModeEvict:
	default:
		errs = append(errs, fmt.Errorf("mode: %q is not one of %s, %s, %s, %s", c.Mode,
			KubernetesModeAuto, KubernetesModeSuspendJob, KubernetesModeKueueWorkload, KubernetesModeEvict))
	}
	if c.KueueVersion == "" {
		errs = append(errs, errors.New("kueue_version: empty (v1beta1, or v1beta2 on Kueue 0.15 and later)"))
	}
	if c.RequestTimeout <= 0 {
		errs = append(errs, fmt.Errorf("request_timeout: %s must be positive", c.RequestTimeout))
	}
	if c.Context != "" && c.Kubeconfig == "" {
		errs = append(errs, errors.New("context: set only with kubeconfig (the in-cluster config has no contexts)"))
	}
	if c.NamespaceLabel == "" && (c.JobLabel != "" || c.WorkloadLabel != "") {
		errs = append(errs, errors.New("namespace_label: needed with job_label or workload_label (Jobs and Workloads are namespaced)"))
	}
	for _, ns := range slices.Sorted(maps.Keys(c.Namespaces)) {
		if c.Namespaces[ns].Team == "" {
			errs = append(errs, fmt.Errorf("namespaces.%s.team: empty (the team that owns the namespace's jobs)", ns))
		}
	}
	for _, mode := range slices.Sorted(maps.Keys(c.SharedResources)) {
		switch {
		case mode != "timeslice" && mode != "mps":
			errs = append(errs, fmt.Errorf("shared_resources.%s: not a sharing mode (timeslice, mps)", mode))
		case c.SharedResources[mode] == "":
			errs = append(errs, fmt.Errorf("shared_resources.%s: empty (the extended resource shared GPUs are offered as, e.g. nvidia.com/gpu.shared)", mode))
		}
	}
	return errors.Join(errs...)
}

// SlurmConfig is scheduler.slurm: how Slurm jobs (keys slurm/<cluster>/<id>) are
// requeued, cancelled and released.
type SlurmConfig struct {
	// Scontrol and Scancel are the commands: a path, or a name looked up on PATH.
	Scontrol string `yaml:"scontrol"`
	Scancel  string `yaml:"scancel"`
	// Timeout bounds each command.
	Timeout time.Duration `yaml:"timeout"`
	// Cluster, when set, is the one Slurm cluster acted on: job IDs are per
	// cluster, so a target from another cluster is refused (ErrUnsupported).
	Cluster string `yaml:"cluster"`
	// RequeueHold requeues with scontrol requeuehold, so a requeued job stays
	// pending until the scheduler admits it again and releases it.
	RequeueHold bool `yaml:"requeue_hold"`
	// JobIDLabel is the label of a job submitted to the scheduler that holds its
	// Slurm job ID; such a job is stopped and released through Slurm. Empty: no
	// such mapping.
	JobIDLabel string `yaml:"job_id_label"`
	// Accounts and Users map a Slurm job's account, else its user, to the team
	// that owns it; Partitions map its partition to a pool. The scheduler
	// resolves a Slurm job's owner by what scontrol show job says of it, never by
	// a finding's or a label's claim: a job whose account and user are missing
	// here is nobody's, and nothing destructive is done to it.
	Accounts   map[string]string `yaml:"accounts"`
	Users      map[string]string `yaml:"users"`
	Partitions map[string]string `yaml:"partitions"`
	// ShardsPerGPU and MPSPerGPU are the cluster's gres.conf counts of one
	// GPU's shards and MPS share (Slurm's convention for MPS: 100). A job
	// placed on a fraction of a GPU (issue 44) is resumed asking
	// gres/shard (timeslice) or gres/mps of ⌈fraction × count / 1000⌉; 0: that
	// mode's request is left as the job's owner wrote it.
	ShardsPerGPU int `yaml:"shards_per_gpu"`
	MPSPerGPU    int `yaml:"mps_per_gpu"`
}

// DefaultSlurmConfig returns scontrol and scancel from PATH, 30s each, no hold,
// and the gpupool.io/slurm-job-id mapping label.
func DefaultSlurmConfig() SlurmConfig {
	return SlurmConfig{Scontrol: "scontrol", Scancel: "scancel", Timeout: 30 * time.Second, JobIDLabel: "gpupool.io/slurm-job-id", MPSPerGPU: 100}
}

// Validate checks the configuration; each error names its field.
func (c SlurmConfig) Validate() error {
	var errs []error
	if c.Scontrol == "" {
		errs = append(errs, errors.New("scontrol: empty (a path, or a name on PATH)"))
	}
	if c.Scancel == "" {
		errs = append(errs, errors.New("scancel: empty (a path, or a name on PATH)"))
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("timeout: %s must be positive", c.Timeout))
	}
	if c.ShardsPerGPU < 0 || c.MPSPerGPU < 0 {
		errs = append(errs, fmt.Errorf("shards_per_gpu, mps_per_gpu: %d, %d; a count per GPU is 0 (not expressed) or more", c.ShardsPerGPU, c.MPSPerGPU))
	}
	for _, m := range []struct {
		field string
		m     map[string]string
	}{{"accounts", c.Accounts}, {"users", c.Users}, {"partitions", c.Partitions}} {
		for _, k := range slices.Sorted(maps.Keys(m.m)) {
			if m.m[k] == "" {
				errs = append(errs, fmt.Errorf("%s.%s: empty", m.field, k))
			}
		}
	}
	return errors.Join(errs...)
}

// AgentConfig is scheduler.agent: processes are killed through the collectors'
// node agents, over the bus.
type AgentConfig struct {
	// PrivateKeyFile holds the scheduler's ed25519 private key (PEM, PKCS #8:
	// openssl genpkey -algorithm ed25519); commands are signed with it and the
	// agents check them with its public key. The default for new setups.
	PrivateKeyFile string `yaml:"private_key_file"`
	// SecretFile holds a secret shared with the node agents (at least 16 bytes)
	// instead, signing with HMAC-SHA256: any node holding it can sign commands for
	// every node. Set one of the two.
	SecretFile string `yaml:"secret_file"`
	// Cluster is the cluster of a target that names none.
	Cluster string `yaml:"cluster"`
	// ReplyMargin is how much longer than the grace period to wait for an answer:
	// the agent waits up to 10s after SIGKILL for the process to go.
	ReplyMargin time.Duration `yaml:"reply_margin"`
	// Reason prefixes the reason sent with each command, logged by the agent.
	Reason string `yaml:"reason"`
}

// DefaultAgentConfig returns a 20s reply margin, the reason "gpupool scheduler"
// and no key or secret file.
func DefaultAgentConfig() AgentConfig {
	return AgentConfig{ReplyMargin: 20 * time.Second, Reason: "gpupool scheduler"}
}

// Validate checks the configuration; each error names its field.
func (c AgentConfig) Validate() error {
	var errs []error
	switch {
	case c.PrivateKeyFile == "" && c.SecretFile == "":
		errs = append(errs, errors.New("private_key_file: empty (the scheduler's ed25519 key signs each command; or secret_file, a secret shared with the node agents)"))
	case c.PrivateKeyFile != "" && c.SecretFile != "":
		errs = append(errs, errors.New("private_key_file and secret_file: set one, not both"))
	}
	if c.ReplyMargin <= 0 {
		errs = append(errs, fmt.Errorf("reply_margin: %s must be positive", c.ReplyMargin))
	}
	return errors.Join(errs...)
}
