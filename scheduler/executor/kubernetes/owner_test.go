package kubernetes

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/gpupool/gpupool/scheduler/executor"
)

// TestOwner: a job's owner is its namespace's, as the API server has the pod
// or Job, through the configured mapping; a namespace not mapped is nobody's;
// nothing found is not found, with the owner of the namespace the target names
// when it names one. Nothing is written.
func TestOwner(t *testing.T) {
	mapping := map[string]executor.NamespaceOwner{ns: {Team: "team-a", Queue: "a"}, "empty": {Team: "team-e", Pool: "dev"}}
	for _, tc := range []struct {
		name     string
		objs     []runtime.Object
		mapping  map[string]executor.NamespaceOwner
		target   executor.Target
		wantTeam string
		wantErr  error
	}{
		{name: "pod by key", objs: []runtime.Object{pod(ownedByJob), job(false, nil)}, mapping: mapping,
			target: executor.Target{Job: key}, wantTeam: "team-a"},
		{name: "Job by name from labels", objs: []runtime.Object{job(false, nil)}, mapping: mapping,
			target: executor.Target{Namespace: ns, K8sJob: "train"}, wantTeam: "team-a"},
		{name: "pod found in all namespaces", objs: []runtime.Object{pod()}, mapping: mapping,
			target: executor.Target{Job: "k8s/_/" + podUID}, wantTeam: "team-a"},
		{name: "unmapped namespace", objs: []runtime.Object{pod()}, mapping: map[string]executor.NamespaceOwner{"other": {Team: "x"}},
			target: executor.Target{Job: key}, wantErr: executor.ErrUnmapped},
		{name: "nothing there, namespace named", mapping: mapping,
			target: executor.Target{Namespace: "empty", K8sJob: "later"}, wantTeam: "team-e", wantErr: executor.ErrNotFound},
		{name: "nothing there", mapping: mapping, target: executor.Target{Job: key}, wantErr: executor.ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kube := fake.NewClientset(tc.objs...)
			cfg := executor.DefaultKubernetesConfig()
			cfg.Mode, cfg.Namespaces = executor.KubernetesModeSuspendJob, tc.mapping
			e, err := New(cfg, WithClients(kube, nil))
			if err != nil {
				t.Fatal(err)
			}
			o, err := e.Owner(t.Context(), tc.target)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("Owner() error %v, want %v", err, tc.wantErr)
			}
			if o.Team != tc.wantTeam {
				t.Fatalf("Owner() = %+v, want team %q", o, tc.wantTeam)
			}
			for _, a := range kube.Actions() {
				if v := a.GetVerb(); v != "get" && v != "list" {
					t.Errorf("Owner wrote: %s %s", v, a.GetResource().Resource)
				}
			}
		})
	}
}
