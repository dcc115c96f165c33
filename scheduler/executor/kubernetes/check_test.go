package kubernetes

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/gpupool/gpupool/scheduler/executor"
)

// TestCheck: what a restarted scheduler learns of a job it had running, on
// client-go's fake clientsets.
func TestCheck(t *testing.T) {
	finishedJob := job(false, nil)
	finishedJob.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
	finishedWL := workload("job-train-1", true)
	_ = unstructured.SetNestedSlice(finishedWL.Object, []any{map[string]any{"type": "Finished", "status": "True"}}, "status", "conditions")
	jobTarget := executor.Target{Job: key, Labels: map[string]string{labelJobName: "train"}}
	wlTarget := executor.Target{Job: key, Namespace: ns, KueueWorkload: "job-train-1"}
	for _, tc := range []struct {
		name     string
		objs     []runtime.Object
		wls      []runtime.Object
		target   executor.Target
		wantGone bool
		want     string
	}{
		{name: "running pod of a Job", objs: []runtime.Object{pod(ownedByJob), job(false, nil)}, target: jobTarget, want: "Job team-a/train still there"},
		{name: "suspended Job, pod gone: still there", objs: []runtime.Object{job(true, nil)}, target: jobTarget, want: "still there"},
		{name: "completed Job", objs: []runtime.Object{finishedJob}, target: jobTarget, wantGone: true, want: "finished"},
		{name: "nothing left", target: jobTarget, wantGone: true, want: "no pod"},
		{name: "bare pod that succeeded", objs: []runtime.Object{pod(func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded })},
			target: executor.Target{Job: key}, wantGone: true, want: "ended (Succeeded)"},
		{name: "bare pod running", objs: []runtime.Object{pod()}, target: executor.Target{Job: key}, want: "Running"},
		{name: "deactivated Workload: still there", wls: []runtime.Object{workload("job-train-1", false)}, target: wlTarget, want: "Workload team-a/job-train-1 still there"},
		{name: "finished Workload", wls: []runtime.Object{finishedWL}, target: wlTarget, wantGone: true, want: "finished"},
		{name: "named Workload deleted", target: wlTarget, wantGone: true, want: "Workload team-a/job-train-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kube := fake.NewClientset(tc.objs...)
			dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
				map[schema.GroupVersionResource]string{wlGVR: "WorkloadList"}, tc.wls...)
			e, err := New(executor.DefaultKubernetesConfig(), WithClients(kube, dyn))
			if err != nil {
				t.Fatal(err)
			}
			p, err := e.Check(t.Context(), tc.target)
			if err != nil {
				t.Fatal(err)
			}
			if p.Gone != tc.wantGone || !strings.Contains(p.Detail, tc.want) {
				t.Errorf("Check = %+v, want Gone %t and a detail with %q", p, tc.wantGone, tc.want)
			}
		})
	}
	e, _ := New(executor.DefaultKubernetesConfig(), WithClients(fake.NewClientset(), nil))
	if _, err := e.Check(t.Context(), executor.Target{Job: "slurm/c1/42", Source: "slurm"}); err == nil {
		t.Error("Check of a Slurm job: no error")
	}
}
