package kubernetes

import (
	"errors"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/gpupool/gpupool/scheduler/executor"
)

// asking gives the Job's container a limit of one resource.
func asking(j *batchv1.Job, res string) *batchv1.Job {
	j.Spec.Template.Spec.Containers = []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{
		Limits: corev1.ResourceList{corev1.ResourceName(res): resource.MustParse("1"), corev1.ResourceCPU: resource.MustParse("2")},
	}}}
	return j
}

// TestResumeShare: a Job placed on a share of a GPU is resumed on its node
// only if it asks the cluster's sharing resource of its mode; one that asks a
// whole GPU is refused (ErrUnsupported, naming both resources) and stays
// suspended, since Kubernetes does not let its resources change.
func TestResumeShare(t *testing.T) {
	shared := executor.Target{Namespace: ns, K8sJob: "train", Placement: []executor.NodeGPUs{
		{Node: "h0", Shares: []executor.GPUShare{{GPU: 1, Fraction: 250, Mode: "mps", MemMiB: 20480}}},
	}}
	for _, tc := range []struct {
		name, res, wantErr, wantDetail string
		wantSuspend                    bool
	}{
		{name: "asks the shared resource", res: "nvidia.com/gpu.shared", wantDetail: "resumed on h0; shares GPU 1 (250/1000, mps) as nvidia.com/gpu.shared"},
		{name: "asks a whole GPU", res: "nvidia.com/gpu", wantSuspend: true,
			wantErr: "asks no nvidia.com/gpu.shared (its containers ask cpu, nvidia.com/gpu)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kube := fake.NewClientset(asking(job(true, nil), tc.res))
			e, err := New(executor.DefaultKubernetesConfig(), WithClients(kube, nil))
			if err != nil {
				t.Fatal(err)
			}
			out, err := e.Resume(t.Context(), shared)
			switch {
			case tc.wantErr != "":
				if !errors.Is(err, executor.ErrUnsupported) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want ErrUnsupported containing %q", err, tc.wantErr)
				}
			case err != nil || !out.Done || !strings.Contains(out.Detail, tc.wantDetail):
				t.Fatalf("outcome %+v, %v; want done with %q", out, err, tc.wantDetail)
			}
			j, err := kube.BatchV1().Jobs(ns).Get(t.Context(), "train", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := j.Spec.Suspend != nil && *j.Spec.Suspend; got != tc.wantSuspend {
				t.Errorf("suspend = %t, want %t", got, tc.wantSuspend)
			}
		})
	}
	cfg := executor.DefaultKubernetesConfig()
	cfg.SharedResources = map[string]string{"hami": "nvidia.com/gpumem", "mps": ""}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "shared_resources.hami: not a sharing mode") || !strings.Contains(err.Error(), "shared_resources.mps: empty") {
		t.Errorf("bad shared_resources: %v", err)
	}
}
