#!/usr/bin/env bash
# Make sure Slurm's daemons and client and MUNGE are installed (Debian packages
# slurmctld, slurmd, slurm-client, munge), as `make deps` does; idempotent. The
# tests start their own one-node cluster (testservers/slurm: munged,
# slurmctld and slurmd on free loopback ports, files in the test's temporary
# directory, stopped when the test ends); nothing here starts a daemon.
set -euo pipefail
have() { command -v "$1" >/dev/null || [ -x "/usr/sbin/$1" ]; }
if have slurmctld && have slurmd && have munged && have scontrol && have sbatch; then
	exit 0
fi
pkgs="slurmctld slurmd slurm-client munge"
echo "installing $pkgs (Debian packages; a one-node Slurm cluster for the executor, prolog/epilog and attribution tests)"
export DEBIAN_FRONTEND=noninteractive
# shellcheck disable=SC2086
if ! { apt-get install -y -qq $pkgs >/dev/null 2>&1 || { apt-get update -qq >/dev/null && apt-get install -y -qq $pkgs >/dev/null; }; }; then
	echo "cannot install $pkgs: run 'apt-get install $pkgs' as root, or set GPUPOOL_TEST_NO_SLURM=1 to skip the tests that need Slurm" >&2
	exit 1
fi
