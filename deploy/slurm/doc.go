// Package slurm holds gpupool's Slurm prolog and epilog (prolog.sh, epilog.sh): the
// prolog writes, on each node of a starting job, a file naming the job's account,
// partition, user, cluster and GPUs, which the collector reads with
// collector.attribution.slurm_job_dir; the epilog removes it. Its tests run
// shellcheck on both and run them with a job's variables, then attribute a task of
// that job with the collector's real attribution code; live_test.go runs them
// under a real slurmd (testservers/slurm) as docs/slurm.md installs
// them. docs/slurm.md is the installation guide.
package slurm
