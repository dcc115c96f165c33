#!/bin/sh
# gpupool Slurm epilog: the job has ended on this node; its GPUs are no longer its.
#
# Install as (or call from) slurmd's Epilog in slurm.conf (docs/slurm.md):
#   Epilog=/etc/slurm/epilog.d/gpupool-epilog.sh
# It removes $GPUPOOL_SLURM_DIR/<job id> (default /run/gpupool/slurm), written by
# gpupool-prolog.sh; GPUPOOL_SLURM_DIR, if the prolog's is moved, must be set the
# same way (in a wrapper: slurmd's own environment does not reach it). Like the prolog it always exits 0: a failing epilog drains the node.

dir="${GPUPOOL_SLURM_DIR:-/run/gpupool/slurm}"
job="${SLURM_JOB_ID:-}"

case "$job" in
'' | *[!0-9]*)
	echo "gpupool epilog: SLURM_JOB_ID '$job' is not a job number; nothing removed" >&2
	exit 0
	;;
esac

if ! rm -f "$dir/$job"; then
	echo "gpupool epilog: cannot remove $dir/$job" >&2
fi
exit 0
