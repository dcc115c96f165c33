package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/gpupool/gpupool/scheduler/executor"
)

const (
	ns     = "team-a"
	podUID = "11111111-2222-3333-4444-555555555555"
	jobUID = "99999999-8888-7777-6666-555555555555"
	key    = "k8s/" + ns + "/" + podUID
)

var wlGVR = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta1", Resource: "workloads"}

type podOpt func(*corev1.Pod)

func pod(opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "train-abcde", Namespace: ns, UID: types.UID(podUID), Labels: map[string]string{}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func ownedByJob(p *corev1.Pod) {
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: jobUID}}
	p.Labels[labelJobName] = "train"
	p.Labels[labelControllerUID] = jobUID
}

func podLabel(k, v string) podOpt { return func(p *corev1.Pod) { p.Labels[k] = v } }

func job(suspended bool, labels map[string]string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: ns, UID: jobUID, Labels: labels},
		Spec:       batchv1.JobSpec{Suspend: &suspended},
	}
}

func workload(name string, active bool) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta1",
		"kind":       "Workload",
		"metadata": map[string]any{
			"name": name, "namespace": ns,
			"labels": map[string]any{labelWorkloadOwnerUID: jobUID},
		},
		"spec": map[string]any{"active": active, "queueName": "gpu"},
	}}
}

// call is what a test case does with the executor.
type call int

const (
	stopRequeue call = iota
	stopCancel
	resume
)

// action renders one recorded API call: verb, resource/subresource, namespace,
// name and the parts of the request that the executor chooses.
func action(a k8stesting.Action) string {
	res := a.GetResource().Resource
	if s := a.GetSubresource(); s != "" {
		res += "/" + s
	}
	s := fmt.Sprintf("%s %s ns=%s", a.GetVerb(), res, a.GetNamespace())
	switch x := a.(type) {
	case k8stesting.PatchAction:
		s += fmt.Sprintf(" %s %s %s", x.GetName(), x.GetPatchType(), x.GetPatch())
	case k8stesting.DeleteAction:
		o := x.GetDeleteOptions()
		s += fmt.Sprintf(" %s propagation=%s uid=%s", x.GetName(), *o.PropagationPolicy, *o.Preconditions.UID)
	case k8stesting.CreateAction:
		if ev, ok := x.GetObject().(*policyv1.Eviction); ok {
			s += fmt.Sprintf(" %s grace=%d uid=%s", ev.Name, *ev.DeleteOptions.GracePeriodSeconds, *ev.DeleteOptions.Preconditions.UID)
		}
	case k8stesting.ListAction:
		if sel := x.GetListRestrictions().Labels.String(); sel != "" {
			s += " labels=" + sel
		}
	case k8stesting.GetAction:
		s += " " + x.GetName()
	}
	return s
}

func actions(f *k8stesting.Fake) []string {
	var out []string
	for _, a := range f.Actions() {
		out = append(out, action(a))
	}
	return out
}

const (
	listPods     = "list pods ns=" + ns
	getJob       = "get jobs ns=" + ns + " train"
	suspendJob   = "patch jobs ns=" + ns + ` train application/merge-patch+json {"spec":{"suspend":true}}`
	unsuspendJob = "patch jobs ns=" + ns + ` train application/merge-patch+json {"spec":{"suspend":false}}`
	deleteJob    = "delete jobs ns=" + ns + " train propagation=Background uid=" + jobUID
	evict30      = "create pods/eviction ns=" + ns + " train-abcde grace=30 uid=" + podUID
	listWLs      = "list workloads ns=" + ns + " labels=" + labelWorkloadOwnerUID + "=" + jobUID
	deactivateWL = "patch workloads ns=" + ns + ` job-train-1 application/merge-patch+json {"spec":{"active":false}}`
	activateWL   = "patch workloads ns=" + ns + ` job-train-1 application/merge-patch+json {"spec":{"active":true}}`
)

func TestExecutor(t *testing.T) {
	kueueJob := map[string]string{labelQueueName: "gpu"}
	tooMany := func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
	}
	for _, tc := range []struct {
		name     string
		mode     string
		objs     []runtime.Object
		wls      []runtime.Object
		reactor  k8stesting.ReactionFunc // on create pods/eviction
		target   executor.Target
		call     call
		grace    time.Duration
		wantDone bool
		wantErr  error
		wantKube []string
		wantDyn  []string
	}{
		{
			name:     "job pod: suspend the Job",
			objs:     []runtime.Object{pod(ownedByJob), job(false, nil)},
			target:   executor.Target{Job: key},
			wantDone: true,
			wantKube: []string{listPods, getJob, suspendJob},
		},
		{
			name:     "job already suspended: no second patch",
			objs:     []runtime.Object{job(true, nil)},
			target:   executor.Target{Job: key, Labels: map[string]string{labelJobName: "train"}},
			wantKube: []string{listPods, getJob},
		},
		{
			name:     "resume: pod gone, Job found from the target's labels",
			objs:     []runtime.Object{job(true, nil)},
			target:   executor.Target{Job: key, Labels: map[string]string{labelJobName: "train"}},
			call:     resume,
			wantDone: true,
			wantKube: []string{listPods, getJob, unsuspendJob},
		},
		{
			name:     "resume: named Job not suspended",
			objs:     []runtime.Object{job(false, nil)},
			target:   executor.Target{Namespace: ns, K8sJob: "train"},
			call:     resume,
			wantKube: []string{getJob},
		},
		{
			name:     "cancel: delete the Job in the background",
			objs:     []runtime.Object{pod(ownedByJob), job(false, nil)},
			target:   executor.Target{Job: key},
			call:     stopCancel,
			wantDone: true,
			wantKube: []string{listPods, getJob, deleteJob},
		},
		{
			name:     "kueue: deactivate the Job's Workload, not the Job",
			objs:     []runtime.Object{pod(ownedByJob, podLabel(labelQueueName, "gpu")), job(false, kueueJob)},
			wls:      []runtime.Object{workload("job-train-1", true)},
			target:   executor.Target{Job: key},
			wantDone: true,
			wantKube: []string{listPods, getJob},
			wantDyn:  []string{listWLs, deactivateWL},
		},
		{
			name:     "kueue: Workload named by the pod's label",
			objs:     []runtime.Object{pod(podLabel(keyWorkloadName, "job-train-1"))},
			wls:      []runtime.Object{workload("job-train-1", true)},
			target:   executor.Target{Namespace: ns, Pod: "train-abcde"},
			wantDone: true,
			wantKube: []string{"get pods ns=" + ns + " train-abcde"},
			wantDyn:  []string{"get workloads ns=" + ns + " job-train-1", deactivateWL},
		},
		{
			name:     "kueue: already inactive",
			wls:      []runtime.Object{workload("job-train-1", false)},
			target:   executor.Target{Namespace: ns, KueueWorkload: "job-train-1"},
			wantDyn:  []string{"get workloads ns=" + ns + " job-train-1"},
			wantKube: nil,
		},
		{
			name:     "kueue: resume reactivates the Workload",
			objs:     []runtime.Object{job(true, kueueJob)},
			wls:      []runtime.Object{workload("job-train-1", false)},
			target:   executor.Target{Job: key, Labels: map[string]string{labelJobName: "train", labelQueueName: "gpu"}},
			call:     resume,
			wantDone: true,
			wantKube: []string{listPods, getJob},
			wantDyn:  []string{listWLs, activateWL},
		},
		{
			name:     "job-suspend: Kueue is never consulted",
			mode:     executor.KubernetesModeSuspendJob,
			objs:     []runtime.Object{pod(ownedByJob, podLabel(labelQueueName, "gpu")), job(false, kueueJob)},
			wls:      []runtime.Object{workload("job-train-1", true)},
			target:   executor.Target{Job: key},
			wantDone: true,
			wantKube: []string{listPods, getJob, suspendJob},
		},
		{
			name:     "bare pod: evict with the grace period",
			objs:     []runtime.Object{pod()},
			target:   executor.Target{Job: key},
			grace:    30 * time.Second,
			wantDone: true,
			wantKube: []string{listPods, evict30},
		},
		{
			name:     "evict: a Job's pod is evicted, the Job left alone",
			mode:     executor.KubernetesModeEvict,
			objs:     []runtime.Object{pod(ownedByJob), job(false, nil)},
			target:   executor.Target{Job: key},
			grace:    29500 * time.Millisecond,
			wantDone: true,
			wantKube: []string{listPods, evict30},
		},
		{
			name:     "cancel a bare pod: evict, grace 0 becomes 1s",
			objs:     []runtime.Object{pod()},
			target:   executor.Target{Job: "k8s/_/" + podUID},
			call:     stopCancel,
			wantDone: true,
			wantKube: []string{"list pods ns=", "create pods/eviction ns=" + ns + " train-abcde grace=1 uid=" + podUID},
		},
		{
			name:     "PodDisruptionBudget refuses the eviction",
			objs:     []runtime.Object{pod()},
			reactor:  tooMany,
			target:   executor.Target{Job: key},
			grace:    30 * time.Second,
			wantErr:  ErrBlockedByPDB,
			wantKube: []string{listPods, evict30},
		},
		{
			name:     "pod already terminating",
			objs:     []runtime.Object{pod(func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)} })},
			target:   executor.Target{Job: key},
			wantKube: []string{listPods},
		},
		{
			name:     "pod not found",
			objs:     []runtime.Object{job(false, nil)},
			target:   executor.Target{Job: key},
			wantErr:  executor.ErrNotFound,
			wantKube: []string{listPods},
		},
		{
			name:     "named Job not found",
			target:   executor.Target{Namespace: ns, K8sJob: "train"},
			wantErr:  executor.ErrNotFound,
			wantKube: []string{getJob},
		},
		{
			name:     "resume a bare pod: unsupported",
			objs:     []runtime.Object{pod()},
			target:   executor.Target{Job: key},
			call:     resume,
			wantErr:  executor.ErrUnsupported,
			wantKube: []string{listPods},
		},
		{
			name:    "a Slurm job: unsupported, no API call",
			target:  executor.Target{Job: "slurm/c1/42", Source: "slurm", SlurmJobID: "42"},
			wantErr: executor.ErrUnsupported,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kube := fake.NewClientset(tc.objs...)
			if tc.reactor != nil {
				kube.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
					if a.GetSubresource() != "eviction" {
						return false, nil, nil
					}
					return tc.reactor(a)
				})
			}
			dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
				map[schema.GroupVersionResource]string{wlGVR: "WorkloadList"}, tc.wls...)
			cfg := executor.DefaultKubernetesConfig()
			if tc.mode != "" {
				cfg.Mode = tc.mode
			}
			e, err := New(cfg, WithClients(kube, dyn))
			if err != nil {
				t.Fatal(err)
			}
			var out executor.Outcome
			switch tc.call {
			case stopRequeue:
				out, err = e.Stop(t.Context(), tc.target, true, tc.grace)
			case stopCancel:
				out, err = e.Stop(t.Context(), tc.target, false, tc.grace)
			case resume:
				out, err = e.Resume(t.Context(), tc.target)
			}
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatalf("err = %v (%s)", err, out.Detail)
			}
			if out.Done != tc.wantDone {
				t.Errorf("Done = %t, want %t (%s)", out.Done, tc.wantDone, out.Detail)
			}
			if got := actions(&kube.Fake); !slices.Equal(got, tc.wantKube) {
				t.Errorf("kube calls:\n got %q\nwant %q", got, tc.wantKube)
			}
			if got := actions(&dyn.Fake); !slices.Equal(got, tc.wantDyn) {
				t.Errorf("dynamic calls:\n got %q\nwant %q", got, tc.wantDyn)
			}
		})
	}
}

// TestSuspendThenResume runs the idle-job cycle on one clientset: the first stop
// suspends, a repeat changes nothing, and resume unsuspends.
func TestSuspendThenResume(t *testing.T) {
	kube := fake.NewClientset(pod(ownedByJob), job(false, nil))
	e, err := New(executor.DefaultKubernetesConfig(), WithClients(kube, nil))
	if err != nil {
		t.Fatal(err)
	}
	target := executor.Target{Job: key, Labels: map[string]string{labelJobName: "train"}}
	steps := []struct {
		do   func(context.Context) (executor.Outcome, error)
		done bool
	}{
		{func(ctx context.Context) (executor.Outcome, error) { return e.Stop(ctx, target, true, time.Minute) }, true},
		{func(ctx context.Context) (executor.Outcome, error) { return e.Stop(ctx, target, true, time.Minute) }, false},
		{func(ctx context.Context) (executor.Outcome, error) { return e.Resume(ctx, target) }, true},
		{func(ctx context.Context) (executor.Outcome, error) { return e.Resume(ctx, target) }, false},
	}
	for i, s := range steps {
		out, err := s.do(t.Context())
		if err != nil || out.Done != s.done {
			t.Fatalf("step %d: %+v, %v; want Done %t", i, out, err, s.done)
		}
	}
	var patches []string
	for _, a := range kube.Actions() {
		if a.GetVerb() == "patch" {
			patches = append(patches, string(a.(k8stesting.PatchAction).GetPatch()))
		}
	}
	if want := []string{string(patchSuspend), string(patchUnsuspend)}; !slices.Equal(patches, want) {
		t.Errorf("patches %q, want %q", patches, want)
	}
}

func TestPDBErrorIsRetryableAndSaysSo(t *testing.T) {
	kube := fake.NewClientset(pod())
	kube.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return a.GetSubresource() == "eviction", nil, apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 10)
	})
	e, err := New(executor.DefaultKubernetesConfig(), WithClients(kube, nil))
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Stop(t.Context(), executor.Target{Job: key}, true, time.Second)
	if !IsRetryable(err) || !strings.Contains(err.Error(), "PodDisruptionBudget") || !strings.Contains(err.Error(), key) {
		t.Fatalf("err = %v: want a retryable error naming the budget and the job", err)
	}
	_, err = e.Stop(t.Context(), executor.Target{Job: "k8s/" + ns + "/gone"}, true, time.Second)
	if !errors.Is(err, executor.ErrNotFound) || IsRetryable(err) {
		t.Fatalf("err = %v: want ErrNotFound, not retryable", err)
	}
}

func TestKillUnsupported(t *testing.T) {
	e, err := New(executor.DefaultKubernetesConfig(), WithClients(fake.NewClientset(), nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Kill(t.Context(), executor.Target{Job: key, Node: "n1", PID: 42}, 0); !errors.Is(err, executor.ErrUnsupported) {
		t.Fatalf("err = %v, want ErrUnsupported", err)
	}
	if e.Name() != "kubernetes" {
		t.Errorf("Name = %q", e.Name())
	}
}

func TestNewWithoutCluster(t *testing.T) {
	cfg := executor.DefaultKubernetesConfig()
	cfg.Kubeconfig = t.TempDir() + "/missing"
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "kubeconfig") {
		t.Fatalf("err = %v, want a kubeconfig error", err)
	}
}
