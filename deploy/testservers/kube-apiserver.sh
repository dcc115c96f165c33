#!/usr/bin/env bash
# Make sure the live Kubernetes tests have their API server, as `make deps` does;
# idempotent. Installs etcd (Debian package etcd-server) when missing and builds
# kube-apiserver from the Go module proxy (tools/kube-apiserver pins
# k8s.io/kubernetes) into ~/.cache/gpupool/kube-apiserver/<version>/ when it is
# not there yet: a cold build takes several minutes, and then never again. The
# tests start their own etcd and API server on free loopback ports in a
# temporary directory (scheduler/executor/kubernetes/kubetest). It also downloads
# the Go module of Kueue, whose Workload CRD the kueue_workload test installs.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tools="$root/tools/kube-apiserver"
version=$(awk '$1 == "require" && $2 == "k8s.io/kubernetes" { print $3 }' "$tools/go.mod")
[ -n "$version" ] || { echo "kube-apiserver.sh: no 'require k8s.io/kubernetes' line in $tools/go.mod" >&2; exit 1; }
cache="${XDG_CACHE_HOME:-$HOME/.cache}/gpupool/kube-apiserver/$version"
bin="${GPUPOOL_KUBE_APISERVER:-$cache/kube-apiserver}"

if ! command -v etcd >/dev/null; then
	echo "installing etcd-server (Debian package; the live Kubernetes tests' etcd)"
	if ! { apt-get install -y -qq etcd-server >/dev/null 2>&1 || { apt-get update -qq >/dev/null && apt-get install -y -qq etcd-server >/dev/null; }; }; then
		echo "cannot install etcd-server: run 'apt-get install etcd-server' as root, or set GPUPOOL_TEST_NO_KUBE=1 to skip the live Kubernetes tests" >&2
		exit 1
	fi
fi

# Kueue's Workload CRD, which the kueue_workload test installs, is in its Go
# module (4.6 MB); deploy/helm/live_executor_test.go names the same version.
kueue_version=v0.17.0
(cd / && go mod download "sigs.k8s.io/kueue@$kueue_version") || {
	echo "cannot download sigs.k8s.io/kueue@$kueue_version (its Workload CRD), or set GPUPOOL_TEST_NO_KUBE=1" >&2
	exit 1
}

[ -x "$bin" ] && exit 0
echo "building kube-apiserver $version (once, several minutes) into $(dirname "$bin")"
mkdir -p "$(dirname "$bin")"
minor=${version#v1.}; minor=${minor%%.*}
(cd "$tools" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -o "$bin.tmp" \
	-ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor" \
	k8s.io/kubernetes/cmd/kube-apiserver) || {
	rm -f "$bin.tmp"
	echo "cannot build kube-apiserver $version: see the error above, or set GPUPOOL_TEST_NO_KUBE=1 to skip the live Kubernetes tests" >&2
	exit 1
}
mv "$bin.tmp" "$bin"
