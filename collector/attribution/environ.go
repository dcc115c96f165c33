package attribution

import "bytes"

// envInfo holds the variables of a process's environment that attribution reads;
// the rest of the environment is never kept.
type envInfo struct {
	// Slurm, set by slurmstepd in every task of a job.
	SlurmJobID     string // SLURM_JOB_ID
	SlurmCluster   string // SLURM_CLUSTER_NAME
	SlurmAccount   string // SLURM_JOB_ACCOUNT: the project
	SlurmPartition string // SLURM_JOB_PARTITION: the queue
	SlurmUser      string // SLURM_JOB_USER
	SlurmStartTime string // SLURM_JOB_START_TIME: seconds since the epoch (Slurm ≥ 21.08)
	SlurmJobGPUs   string // SLURM_JOB_GPUS: the job's GPU indices on this node, e.g. "0,1"
	SlurmComment   string // SLURM_JOB_COMMENT: the job's --comment (the prolog's job file has it)

	// gpupool's own, for processes no scheduler knows.
	Job      string // GPUPOOL_JOB
	Team     string // GPUPOOL_TEAM
	Project  string // GPUPOOL_PROJECT
	Queue    string // GPUPOOL_QUEUE
	Pool     string // GPUPOOL_POOL
	Model    string // GPUPOOL_MODEL
	Workload string // GPUPOOL_WORKLOAD
}

// parseEnviron reads the contents of /proc/<pid>/environ: NAME=value entries, each
// ended by a NUL. Entries without '=' are skipped; when a name repeats, its first
// non-empty value wins. Values are trimmed of surrounding spaces.
func parseEnviron(b []byte) envInfo {
	var e envInfo
	for len(b) > 0 {
		var kv []byte
		kv, b, _ = bytes.Cut(b, []byte{0})
		name, value, ok := bytes.Cut(kv, []byte{'='})
		if !ok {
			continue
		}
		var dst *string
		switch string(name) {
		case "SLURM_JOB_ID":
			dst = &e.SlurmJobID
		case "SLURM_CLUSTER_NAME":
			dst = &e.SlurmCluster
		case "SLURM_JOB_ACCOUNT":
			dst = &e.SlurmAccount
		case "SLURM_JOB_PARTITION":
			dst = &e.SlurmPartition
		case "SLURM_JOB_USER":
			dst = &e.SlurmUser
		case "SLURM_JOB_START_TIME":
			dst = &e.SlurmStartTime
		case "SLURM_JOB_GPUS":
			dst = &e.SlurmJobGPUs
		case "SLURM_JOB_COMMENT":
			dst = &e.SlurmComment
		case "GPUPOOL_JOB":
			dst = &e.Job
		case "GPUPOOL_TEAM":
			dst = &e.Team
		case "GPUPOOL_PROJECT":
			dst = &e.Project
		case "GPUPOOL_QUEUE":
			dst = &e.Queue
		case "GPUPOOL_POOL":
			dst = &e.Pool
		case "GPUPOOL_MODEL":
			dst = &e.Model
		case "GPUPOOL_WORKLOAD":
			dst = &e.Workload
		default:
			continue
		}
		if *dst == "" {
			*dst = string(bytes.TrimSpace(value))
		}
	}
	return e
}
