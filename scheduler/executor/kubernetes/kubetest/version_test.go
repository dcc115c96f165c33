package kubetest

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestVersionsInStep keeps Version, the k8s.io/kubernetes that
// tools/kube-apiserver builds and the client-go gpupool uses in step: the
// API server the tests run is the release of the client that talks to it.
func TestVersionsInStep(t *testing.T) {
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	tools := read("../../../../tools/kube-apiserver/go.mod")
	if m := regexp.MustCompile(`(?m)^require k8s\.io/kubernetes (\S+)$`).FindStringSubmatch(tools); m == nil || m[1] != Version {
		t.Errorf("tools/kube-apiserver/go.mod requires k8s.io/kubernetes %v, kubetest.Version is %s", m, Version)
	}
	staging := "v0." + strings.TrimPrefix(Version, "v1.")
	for _, l := range regexp.MustCompile(`(?m)^\s*(k8s\.io/\S+) => (\S+) (\S+)$`).FindAllStringSubmatch(tools, -1) {
		if l[3] != staging {
			t.Errorf("tools/kube-apiserver/go.mod replaces %s with %s, want %s", l[1], l[3], staging)
		}
	}
	m := regexp.MustCompile(`(?m)^\s*k8s\.io/client-go (\S+)$`).FindStringSubmatch(read("../../../../go.mod"))
	if m == nil || m[1] != staging {
		t.Errorf("gpupool's go.mod has client-go %v, the API server is %s (want client-go %s)", m, Version, staging)
	}
	sh := read("../../../../deploy/testservers/kube-apiserver.sh")
	if !strings.Contains(sh, "tools/kube-apiserver") {
		t.Error("deploy/testservers/kube-apiserver.sh does not build from tools/kube-apiserver")
	}
}
