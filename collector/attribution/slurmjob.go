package attribution

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// maxSlurmJobFileBytes bounds a job file; the prolog writes a few hundred bytes.
const maxSlurmJobFileBytes = 64 << 10

// readSlurmJobFile reads <dir>/<jobID>, written by deploy/slurm/prolog.sh: the
// job's SLURM_* variables as NAME=value lines, in the names of a task's
// environment (parseEnviron reads both). A file for another job than its name
// says is refused.
func readSlurmJobFile(dir, jobID string) (envInfo, error) {
	if !isDigits(jobID) {
		return envInfo{}, fmt.Errorf("slurm job file: job ID %q is not a number", jobID)
	}
	path := filepath.Join(dir, jobID)
	f, err := os.Open(path)
	if err != nil {
		return envInfo{}, fmt.Errorf("slurm job file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSlurmJobFileBytes+1))
	if err != nil {
		return envInfo{}, fmt.Errorf("slurm job file %s: %w", path, err)
	}
	if len(b) > maxSlurmJobFileBytes {
		return envInfo{}, fmt.Errorf("slurm job file %s: over %d bytes", path, maxSlurmJobFileBytes)
	}
	env := parseEnviron(bytes.ReplaceAll(b, []byte{'\n'}, []byte{0}))
	if env.SlurmJobID != jobID {
		return envInfo{}, fmt.Errorf("slurm job file %s: SLURM_JOB_ID=%q, not job %s", path, env.SlurmJobID, jobID)
	}
	// The file says who owns the job, nothing else: gpupool's own variables are a
	// task's to set, not the prolog's.
	return envInfo{
		SlurmJobID: env.SlurmJobID, SlurmCluster: env.SlurmCluster, SlurmAccount: env.SlurmAccount,
		SlurmPartition: env.SlurmPartition, SlurmUser: env.SlurmUser, SlurmStartTime: env.SlurmStartTime,
		SlurmJobGPUs: env.SlurmJobGPUs, SlurmComment: env.SlurmComment,
	}, nil
}
