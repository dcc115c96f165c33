#!/usr/bin/env bash
# Make sure promtool and the Prometheus server are installed (Debian package
# prometheus), as `make deps` does; idempotent. The tests start their own server
# on a free loopback port (internal/testservers.StartPrometheus) and check rules
# and metrics with promtool.
set -euo pipefail
if command -v promtool >/dev/null && command -v prometheus >/dev/null; then
	exit 0
fi
echo "installing prometheus (Debian package; promtool and the server for the alert-rule, metrics and scrape tests)"
if ! { apt-get install -y -qq prometheus >/dev/null 2>&1 || { apt-get update -qq >/dev/null && apt-get install -y -qq prometheus >/dev/null; }; }; then
	echo "cannot install prometheus: run 'apt-get install prometheus' as root, or set GPUPOOL_TEST_NO_PROMETHEUS=1 to skip its tests" >&2
	exit 1
fi
