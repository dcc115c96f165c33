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
	// Cgroup is the job's own cgroup v2 directory below the cgroup root
	// ("/kubepods.slice/…/kubepods-burstable-pod<uid>.slice",
	// "/system.slice/slurmstepd.scope/job_<id>"); empty when the job has none of its
	// own. The collector reads its memory.events for the job's OOM kills.
	Cgroup string
	// EndReason is the scheduler's word for why the job's last container ended
	// (the kubelet's terminated reason: OOMKilled, Error, DeadlineExceeded), when
	// attribution has it; it goes on the job's end event as gpupool.io/end-reason.
	EndReason string
	// Output is the Prometheus counter the job counts its output in; zero when the
	// job names none.
	Output OutputTarget
}

// OutputTarget is a job's output counter: the metric Metric, summed over its
// series, at the Prometheus text endpoint URL, counting Unit (tokens, samples,
// requests, steps).
type OutputTarget struct {
	URL    string
	Metric string
	Unit   string
}

// IsZero reports whether t names no counter.
func (t OutputTarget) IsZero() bool { return t.URL == "" || t.Metric == "" }

// JobEnd is what a scheduler says of how a job ended: its word for why
// (OOMKilled, Error, DeadlineExceeded), its status (succeeded or failed; empty
// while it does not say) and the exit code. Empty fields are unknown.
type JobEnd struct {
	Reason   string
	Status   string
	ExitCode int32
}

// EndReasoner is an Attributor that can say, when a job ends, how its scheduler
// says it ended (the kubelet's pod status).
type EndReasoner interface {
	EndReason(ctx context.Context, info JobInfo) JobEnd
}

// Attributor says which job a process belongs to. Implementations cache by PID and
// process start time, so attributing every process every tick stays cheap.
type Attributor interface {
	Attribute(ctx context.Context, pid uint32) (JobInfo, error)
}
