// Package kubetest starts a real Kubernetes API server for a test: Debian's etcd
// (package etcd-server) and kube-apiserver built from k8s.io/kubernetes by
// deploy/testservers/kube-apiserver.sh (tools/kube-apiserver pins it, at the
// Kubernetes version of gpupool's client-go), on free loopback ports with a
// temporary directory, self-signed certificates generated at start and
// --authorization-mode=RBAC. No controller-manager, scheduler or kubelet runs:
// a test creates what they would (service accounts, pods, a Job's status).
//
// Start gives the admin identity (group system:masters, through a static
// token) and As gives any other identity through impersonation, so a test can
// act as exactly the chart's ServiceAccount under the chart's RBAC. A test that
// needs the server and cannot start it fails, saying how to get it, unless
// GPUPOOL_TEST_NO_KUBE=1.
package kubetest
