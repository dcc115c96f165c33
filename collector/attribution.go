package collector

import "context"

// JobInfo is what attribution learns about the job a process belongs to.
type JobInfo struct {
	// Job is the job key ("k8s/<namespace>/<pod uid>", "slurm/<cluster>/<job id>",
	// "proc/<node>/<GPUPOOL_JOB>" or "proc/<node>/<pid>/<start unix s>"); empty when the process could not be
	// attributed. An unattributed process is still sampled.
	Job string
	// Source is who knows the job: kubernetes, slurm or process (schemas.Source*).
	Source    string
	Team      string
	Project   string
	Queue     string
	Pool      string
	ModelName string
	Workload  string
	// Labels are the job's labels (Kubernetes pod labels, for example); they go to
	// the jobs table through a job event, never onto sample rows.
	Labels map[string]string
	// StartMs is when the job started (ms since the epoch), when known; 0 otherwise.
	StartMs int64
}

// Attributor says which job a process belongs to. Implementations cache by PID and
// process start time, so attributing every process every tick stays cheap.
type Attributor interface {
	Attribute(ctx context.Context, pid uint32) (JobInfo, error)
}
