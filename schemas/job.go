package schemas

// Job event kinds (JobEvent.Event).
const (
	EventSubmit  = "submit"
	EventAdmit   = "admit"
	EventStart   = "start"
	EventEnd     = "end"
	EventPreempt = "preempt"
	EventRequeue = "requeue"
)

// Labels of job events that the views read (docs/finance.md).
const (
	// LabelEndReason is the scheduler's own word for why an attempt ended, as
	// Kubernetes (a container's terminated reason: OOMKilled, DeadlineExceeded)
	// and Slurm (the job state: OUT_OF_MEMORY, TIMEOUT) report it (job_failures).
	LabelEndReason = "gpupool.io/end-reason"
	// LabelOutputUnits is what a job produced, a decimal count, and
	// LabelOutputUnit what was counted (tokens, samples, requests, steps); its
	// launcher sets them on any event, the latest wins (job_output).
	LabelOutputUnits = "gpupool.io/output-units"
	LabelOutputUnit  = "gpupool.io/output-unit"
	// LabelOOMKills is how many of a job's processes the kernel's OOM killer
	// killed, from its cgroup's memory.events (the node's collector sets it on the
	// job's end event; job_failures reads it as oom_killed).
	LabelOOMKills = "gpupool.io/oom-kills"
	// LabelECCUncorrected and LabelECCCorrected are the uncorrectable
	// (double-bit) and corrected (single-bit) ECC errors the job's GPUs counted
	// while it held them, from the volatile counters DCGM or NVML report (the
	// collector sets them on the end event; job_failures reads an uncorrectable
	// one as gpu_ecc).
	LabelECCUncorrected = "gpupool.io/gpu-ecc-uncorrected"
	LabelECCCorrected   = "gpupool.io/gpu-ecc-corrected"
)

// Job end states (JobEvent.Status).
const (
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
	StatusPreempted = "preempted"
)

// Workload kinds (JobEvent.Workload).
const (
	WorkloadTraining       = "training"
	WorkloadInference      = "inference"
	WorkloadBatchInference = "batch-inference"
	WorkloadDev            = "dev"
	WorkloadOther          = "other"
)

// Job sources (JobEvent.Source): who knows about the job.
const (
	SourceKubernetes = "kubernetes"
	SourceSlurm      = "slurm"
	SourceProcess    = "process"
	SourceScheduler  = "scheduler"
)

var (
	validEvents   = map[string]bool{EventSubmit: true, EventAdmit: true, EventStart: true, EventEnd: true, EventPreempt: true, EventRequeue: true}
	validStatuses = map[string]bool{"": true, StatusSucceeded: true, StatusFailed: true, StatusCancelled: true, StatusPreempted: true}
)

// JobEvent is something a scheduler did to a job attempt: the trace format's `job`
// record. Events are partial: a start event need not repeat the team given at
// submit; the store merges all events of a job key into one row of `jobs`.
type JobEvent struct {
	TimeMs int64
	// Job is the job key, unique per attempt across the pool
	// ("k8s/ns/pod-uid", "slurm/c1/123456", "proc/node/pid/start").
	Job       string
	Event     string
	Cluster   string
	Team      string
	Project   string
	Queue     string
	Pool      string
	ModelName string
	Workload  string
	// GPUs is the number of whole GPUs requested (0 for a job of MIG
	// instances, so that nothing that counts GPUs counts an instance as one).
	GPUs uint32
	// Card is the card type requested; empty for any (for a job of MIG
	// instances, the card they are on).
	Card string
	// MIGProfile is set on a job of MIG instances ("1g.10gb"), and
	// MIGInstances is how many instances of that profile it asks for.
	MIGProfile   string
	MIGInstances uint32
	// GPUFraction is set on a job of a share of one GPU, in thousandths
	// (1–999; GPUs is then 0), and Sharing is its mode ("timeslice", "mps").
	GPUFraction uint32
	Sharing     string
	Nodes       []string
	GPUUUIDs    []string
	Status      string
	ExitCode    int32
	// Attempt is 1 for the first run.
	Attempt uint32
	// RerunOf is the job key of the failed attempt this one reruns.
	RerunOf string
	Source  string
	Labels  map[string]string
}
