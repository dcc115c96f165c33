package helm

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/gpupool/gpupool/scheduler/executor"
	"github.com/gpupool/gpupool/scheduler/executor/kubernetes"
)

const (
	testNS = "team-a"
	podUID = "11111111-2222-3333-4444-555555555555"
	jobUID = "99999999-8888-7777-6666-555555555555"
)

// fixtures are a Kueue-managed Job with its pod and Workload, a Job Kueue does not
// manage with its pod, and a bare pod: what
// the executor meets in a cluster.
func fixtures() (kubeObjs []runtime.Object, wls []runtime.Object) {
	jobPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: "train-abcde", Namespace: testNS, UID: types.UID(podUID),
		Labels:          map[string]string{"batch.kubernetes.io/job-name": "train", "batch.kubernetes.io/controller-uid": jobUID, "kueue.x-k8s.io/queue-name": "gpu"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: jobUID}},
	}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	bare := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "notebook", Namespace: testNS, UID: "bare-uid", Labels: map[string]string{}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	suspended := false
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: testNS, UID: jobUID, Labels: map[string]string{"kueue.x-k8s.io/queue-name": "gpu"}},
		Spec: batchv1.JobSpec{Suspend: &suspended}}
	wl := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload",
		"metadata": map[string]any{"name": "job-train-1", "namespace": testNS, "labels": map[string]any{"kueue.x-k8s.io/job-uid": jobUID}},
		"spec":     map[string]any{"active": true, "queueName": "gpu"},
	}}
	// A Job Kueue does not manage, and its pod.
	plain := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: testNS, UID: "plain-job-uid"}, Spec: batchv1.JobSpec{Suspend: &suspended}}
	plainPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: "plain-xyz", Namespace: testNS, UID: "plain-pod-uid",
		Labels:          map[string]string{"batch.kubernetes.io/job-name": "plain", "batch.kubernetes.io/controller-uid": "plain-job-uid"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "plain", UID: "plain-job-uid"}},
	}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	return []runtime.Object{jobPod, bare, job, plain, plainPod}, []runtime.Object{wl}
}

// executorCalls runs the scheduler's Kubernetes executor, in the given mode,
// through every way it is used (stop with and without requeue, resume) on every
// kind of target (a job key, a pod, a Job, a Workload by name, a job key whose
// namespace is unknown), and returns the API permissions its calls needed, as
// "group resource verb".
func executorCalls(t *testing.T, mode string) map[string]bool {
	t.Helper()
	targets := []executor.Target{
		{Job: "k8s/" + testNS + "/" + podUID, Source: "kubernetes"},
		{Job: "k8s/_/" + podUID, Source: "kubernetes"},
		{Job: "k8s/" + testNS + "/bare-uid", Source: "kubernetes"},
		{Namespace: testNS, Pod: "train-abcde"},
		{Namespace: testNS, K8sJob: "train"},
		{Namespace: testNS, KueueWorkload: "job-train-1"},
		{Namespace: testNS, Pod: "notebook"},
		{Job: "k8s/" + testNS + "/plain-pod-uid", Source: "kubernetes"},
	}
	got := map[string]bool{}
	for _, tgt := range targets {
		for _, call := range []string{"stop-requeue", "stop-cancel", "resume"} {
			kubeObjs, wls := fixtures()
			kube := fake.NewClientset(kubeObjs...)
			gvr := schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta1", Resource: "workloads"}
			dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "WorkloadList"}, wls...)
			cfg := executor.DefaultKubernetesConfig()
			cfg.Mode = mode
			e, err := kubernetes.New(cfg, kubernetes.WithClients(kube, dyn))
			if err != nil {
				t.Fatal(err)
			}
			switch call {
			case "stop-requeue":
				_, err = e.Stop(t.Context(), tgt, true, 30*time.Second)
			case "stop-cancel":
				_, err = e.Stop(t.Context(), tgt, false, 30*time.Second)
			case "resume":
				_, err = e.Resume(t.Context(), tgt)
			}
			_ = err // unsupported combinations (resume in evict mode) still show their calls
			for _, f := range []*k8stesting.Fake{&kube.Fake, &dyn.Fake} {
				for _, a := range f.Actions() {
					res := a.GetResource().Resource
					if s := a.GetSubresource(); s != "" {
						res += "/" + s
					}
					got[a.GetResource().Group+" "+res+" "+a.GetVerb()] = true
				}
			}
		}
	}
	return got
}

// TestSchedulerRBACIsTheExecutors checks, for each executor mode, that the rules
// the chart grants the scheduler's ServiceAccount are exactly the permissions
// the executor's calls need: none missing (an action would fail in the cluster)
// and none extra.
func TestSchedulerRBACIsTheExecutors(t *testing.T) {
	for _, c := range []struct {
		renderCase string
		mode       string
		roles      int // Roles (one per namespace), or 0 for the ClusterRole
	}{
		{"default", "auto", 0},
		{"suspend-job", "suspend_job", 0},
		{"kueue-workload", "kueue_workload", 0},
		{"evict-namespaced", "evict", 2},
	} {
		t.Run(c.mode, func(t *testing.T) {
			var rc renderCase
			for _, x := range cases {
				if x.name == c.renderCase {
					rc = x
				}
			}
			want := executorCalls(t, c.mode)
			var granted []map[string]bool
			for _, o := range render(t, rc) {
				if o.name() != "gpupool-scheduler" || (o.kind() != "ClusterRole" && o.kind() != "Role") {
					continue
				}
				obj, err := decode(o)
				if err != nil {
					t.Fatal(err)
				}
				var rules []rbacv1.PolicyRule
				switch r := obj.(type) {
				case *rbacv1.ClusterRole:
					rules = r.Rules
				case *rbacv1.Role:
					rules = r.Rules
				}
				g := map[string]bool{}
				for _, r := range rules {
					if len(r.ResourceNames) > 0 || len(r.NonResourceURLs) > 0 {
						t.Errorf("%v: rule %v narrows by name or URL, which the executor cannot rely on", o, r)
					}
					for _, grp := range r.APIGroups {
						for _, res := range r.Resources {
							for _, v := range r.Verbs {
								if grp == "*" || res == "*" || v == "*" {
									t.Errorf("%v: wildcard in rule %v", o, r)
								}
								g[grp+" "+res+" "+v] = true
							}
						}
					}
				}
				granted = append(granted, g)
			}
			wantRoles := max(c.roles, 1)
			if len(granted) != wantRoles {
				t.Fatalf("%d scheduler roles rendered, want %d", len(granted), wantRoles)
			}
			for _, g := range granted {
				if missing := diff(want, g); len(missing) > 0 {
					t.Errorf("the executor calls what the chart does not grant: %s", strings.Join(missing, "; "))
				}
				if extra := diff(g, want); len(extra) > 0 {
					t.Errorf("the chart grants what the executor never calls: %s", strings.Join(extra, "; "))
				}
			}
		})
	}
}

// diff is a's keys that b lacks, sorted.
func diff(a, b map[string]bool) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(a)) {
		if !b[k] {
			out = append(out, k)
		}
	}
	return out
}
