//go:build tools

// Package tools pins kube-apiserver for gpupool's tests: deploy/testservers/kube-apiserver.sh
// builds k8s.io/kubernetes/cmd/kube-apiserver from this module, kept out of gpupool's own
// go.mod so that the API server's several hundred dependencies never reach gpupool's build.
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
