#!/bin/sh
# gpupool Slurm prolog: tells the node's gpupool collector which job owns which GPUs.
#
# Install as (or call from) slurmd's Prolog in slurm.conf (docs/slurm.md):
#   Prolog=/etc/slurm/prolog.d/gpupool-prolog.sh
# It runs as root on each node of the job when the job starts, and writes
# $GPUPOOL_SLURM_DIR/<job id> (default /run/gpupool/slurm), which the collector reads
# with collector.attribution.slurm_job_dir: the job's account, partition, user,
# cluster, start time and GPU indices (SLURM_JOB_GPUS) as NAME=value lines. The
# collector uses it for the job's processes whose environment it cannot read.
#
# GPUPOOL_SLURM_DIR moves the directory, but slurmd runs the prolog with an
# environment of its own (the SLURM_* variables and little else): a
# GPUPOOL_SLURM_DIR set for slurmd never reaches it. Set it in a wrapper that
# execs this script (docs/slurm.md).
#
# A prolog that fails drains the node, so this one reports problems on stderr
# (slurmd's log) and always exits 0.

dir="${GPUPOOL_SLURM_DIR:-/run/gpupool/slurm}"
job="${SLURM_JOB_ID:-}"

case "$job" in
'' | *[!0-9]*)
	echo "gpupool prolog: SLURM_JOB_ID '$job' is not a job number; nothing written" >&2
	exit 0
	;;
esac

# value prints one variable's value with newlines and NULs removed, so it stays
# one NAME=value line.
value() {
	printf '%s' "$1" | tr -d '\n\000'
}

if ! mkdir -p "$dir" 2>/dev/null; then
	echo "gpupool prolog: cannot create $dir; job $job not recorded" >&2
	exit 0
fi
chmod 0755 "$dir" 2>/dev/null

tmp="$dir/.$job.$$"
umask 022
if ! {
	printf 'SLURM_JOB_ID=%s\n' "$job"
	printf 'SLURM_CLUSTER_NAME=%s\n' "$(value "${SLURM_CLUSTER_NAME:-}")"
	printf 'SLURM_JOB_ACCOUNT=%s\n' "$(value "${SLURM_JOB_ACCOUNT:-}")"
	printf 'SLURM_JOB_PARTITION=%s\n' "$(value "${SLURM_JOB_PARTITION:-}")"
	printf 'SLURM_JOB_USER=%s\n' "$(value "${SLURM_JOB_USER:-}")"
	printf 'SLURM_JOB_START_TIME=%s\n' "$(date +%s)"
	# SLURM_JOB_GPUS: the GPU indices slurmd gave the job on this node (gres/gpu);
	# CUDA_VISIBLE_DEVICES where an older Slurm sets only that.
	printf 'SLURM_JOB_GPUS=%s\n' "$(value "${SLURM_JOB_GPUS:-${CUDA_VISIBLE_DEVICES:-}}")"
	# SLURM_JOB_COMMENT: the job's --comment, where it may name its output counter
	# (gpupool.io/output-metric=…,gpupool.io/output-port=…; docs/finance.md).
	printf 'SLURM_JOB_COMMENT=%s\n' "$(value "${SLURM_JOB_COMMENT:-}")"
} >"$tmp" 2>/dev/null; then
	echo "gpupool prolog: cannot write $tmp; job $job not recorded" >&2
	rm -f "$tmp"
	exit 0
fi
# Renamed into place: the collector never reads half a file.
if ! mv -f "$tmp" "$dir/$job"; then
	echo "gpupool prolog: cannot rename $tmp to $dir/$job" >&2
	rm -f "$tmp"
fi
exit 0
