package helm

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gpupool/gpupool/scheduler/executor"
	"github.com/gpupool/gpupool/scheduler/executor/kubernetes"
	"github.com/gpupool/gpupool/scheduler/executor/kubernetes/kubetest"
)

const liveNS = "team-a"

// liveJob creates, as a user and the Job controller would, a Job and one pod
// of it (Pending: no scheduler or kubelet runs), and returns both.
func liveJob(t *testing.T, c clients, name string, suspend bool, labels map[string]string) (*batchv1.Job, *corev1.Pod) {
	t.Helper()
	j, err := c.kube.BatchV1().Jobs(liveNS).Create(t.Context(), &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: batchv1.JobSpec{Suspend: &suspend, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "train", Image: "busybox"}},
		}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create Job %s: %v", name, err)
	}
	yes := true
	p, err := c.kube.CoreV1().Pods(liveNS).Create(t.Context(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name + "-abcde",
			Labels:          map[string]string{"batch.kubernetes.io/job-name": name, "batch.kubernetes.io/controller-uid": string(j.UID)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: name, UID: j.UID, Controller: &yes}},
		},
		Spec: j.Spec.Template.Spec,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod of Job %s: %v", name, err)
	}
	inCache(t, c, p)
	return j, p
}

func livePod(t *testing.T, c clients, name string) *corev1.Pod {
	t.Helper()
	p, err := c.kube.CoreV1().Pods(liveNS).Create(t.Context(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "nb", Image: "busybox"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s: %v", name, err)
	}
	inCache(t, c, p)
	return p
}

// inCache waits until a list served from the API server's watch cache
// (resourceVersion "0", as the executor lists pods by UID) has the pod: a pod
// created a moment ago may not be there yet.
func inCache(t *testing.T, c clients, p *corev1.Pod) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		l, err := c.kube.CoreV1().Pods(p.Namespace).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, err
		}
		for _, x := range l.Items {
			if x.UID == p.UID {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("pod %s/%s never in the watch cache: %v", p.Namespace, p.Name, err)
	}
}

func jobKey(p *corev1.Pod) executor.Target {
	return executor.Target{Job: "k8s/" + p.Namespace + "/" + string(p.UID), Source: "kubernetes"}
}

// TestExecutorWithChartRBAC runs the Kubernetes executor, in each mode, against
// a real API server as exactly the chart's scheduler ServiceAccount under the
// RBAC the chart renders for that mode: each action takes effect on the server,
// the owner lookup maps the namespace, and a call outside the chart's rules is
// refused with 403.
func TestExecutorWithChartRBAC(t *testing.T) {
	srv := kubetest.Start(t)
	admin := newClients(t, srv.Admin)
	installThirdPartyCRDs(t, admin)
	ensureNamespace(t, admin, releaseNS)
	ensureNamespace(t, admin, liveNS)
	ensureNamespace(t, admin, "team-b")
	sa := srv.AsServiceAccount(releaseNS, "gpupool-scheduler")
	asSA := newClients(t, sa)

	for _, c := range []struct{ renderCase, mode string }{
		{"default", executor.KubernetesModeAuto},
		{"suspend-job", executor.KubernetesModeSuspendJob},
		{"evict-namespaced", executor.KubernetesModeEvict},
		{"kueue-workload", executor.KubernetesModeKueueWorkload},
	} {
		t.Run(c.mode, func(t *testing.T) {
			var rc renderCase
			for _, x := range cases {
				if x.name == c.renderCase {
					rc = x
				}
			}
			var rbac []object
			for _, o := range render(t, rc) {
				switch o.kind() {
				case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
					if o.name() == "gpupool-scheduler" {
						rbac = append(rbac, o)
					}
				}
			}
			if len(rbac) < 3 {
				t.Fatalf("%d scheduler RBAC objects rendered", len(rbac))
			}
			applied := applyChart(t, srv.Admin, admin, rbac, releaseNS)
			t.Cleanup(func() { deleteAll(t, admin, applied) })
			if c.mode == executor.KubernetesModeKueueWorkload {
				installCRD(t, admin, kueueCRD(t))
			}
			cfg := executor.DefaultKubernetesConfig()
			cfg.Mode = c.mode
			cfg.Namespaces = map[string]executor.NamespaceOwner{liveNS: {Team: "alpha", Queue: "alpha-gpu"}}
			e, err := kubernetes.New(cfg, kubernetes.WithClients(asSA.kube, asSA.dyn))
			if err != nil {
				t.Fatal(err)
			}
			ctx := t.Context()
			prefix := map[string]string{
				executor.KubernetesModeAuto: "a", executor.KubernetesModeSuspendJob: "s",
				executor.KubernetesModeEvict: "e", executor.KubernetesModeKueueWorkload: "k",
			}[c.mode]

			// Owner: the namespace the server has the pod in, mapped to its team.
			_, pod := liveJob(t, admin, prefix+"-owner", false, nil)
			o, err := e.Owner(ctx, jobKey(pod))
			if err != nil || o.Team != "alpha" || o.Namespace != liveNS || o.Queue != "alpha-gpu" {
				t.Errorf("Owner = %+v, %v; want team alpha, queue alpha-gpu in %s", o, err, liveNS)
			}

			switch c.mode {
			case executor.KubernetesModeAuto, executor.KubernetesModeSuspendJob:
				liveSuspendResume(t, e, admin, prefix)
			case executor.KubernetesModeEvict:
				// Stop with requeue evicts the pod; resume is refused.
				_, p := liveJob(t, admin, "e-train", false, nil)
				out, err := e.Stop(ctx, jobKey(p), true, 5*time.Second)
				if err != nil || !out.Done {
					t.Fatalf("Stop (evict) = %+v, %v", out, err)
				}
				gone(t, admin, p)
				if _, err := e.Resume(ctx, jobKey(p)); !errors.Is(err, executor.ErrUnsupported) {
					t.Errorf("Resume in evict mode: %v, want ErrUnsupported", err)
				}
				// The namespaced Roles reach team-a and team-b only.
				if err := asSA.kube.CoreV1().Pods("default").Delete(ctx, "x", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
					t.Errorf("deleting a pod in namespace default: %v, want 403 (Roles in team-a, team-b only)", err)
				}
			case executor.KubernetesModeKueueWorkload:
				liveWorkload(t, e, admin, asSA)
			}

			// A bare pod is evicted in every mode (cancel).
			bare := livePod(t, admin, prefix+"-notebook")
			out, err := e.Stop(ctx, jobKey(bare), false, 5*time.Second)
			if err != nil || !out.Done {
				t.Errorf("Stop (cancel) of a bare pod = %+v, %v", out, err)
			} else {
				gone(t, admin, bare)
			}

			// Outside the chart's rules: deleting a Secret is refused.
			if _, err := admin.kube.CoreV1().Secrets(liveNS).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: prefix + "-secret"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			err = asSA.kube.CoreV1().Secrets(liveNS).Delete(ctx, prefix+"-secret", metav1.DeleteOptions{})
			if !apierrors.IsForbidden(err) {
				t.Errorf("the scheduler's ServiceAccount deleting a Secret: %v, want 403 Forbidden", err)
			}
		})
	}
}

// liveSuspendResume: stop with requeue suspends the Job; resume with a
// placement writes the node affinity and unsuspends it in one patch (which the
// server accepts only while the Job is suspended and not started); stop
// without requeue deletes it.
func liveSuspendResume(t *testing.T, e *kubernetes.Executor, admin clients, prefix string) {
	ctx := t.Context()
	j, p := liveJob(t, admin, prefix+"-train", false, nil)
	out, err := e.Stop(ctx, jobKey(p), true, 5*time.Second)
	if err != nil || !out.Done {
		t.Fatalf("Stop (requeue) = %+v, %v", out, err)
	}
	got, err := admin.kube.BatchV1().Jobs(liveNS).Get(ctx, j.Name, metav1.GetOptions{})
	if err != nil || got.Spec.Suspend == nil || !*got.Spec.Suspend {
		t.Fatalf("Job after stop: suspend %v, %v; want true", got.Spec.Suspend, err)
	}
	// The controller would now delete the suspended Job's pods; the target keeps
	// the pod's labels, all that is left to find the Job by.
	if err := admin.kube.CoreV1().Pods(liveNS).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	tgt := jobKey(p)
	tgt.Namespace, tgt.Labels = liveNS, p.Labels
	tgt.Placement = []executor.NodeGPUs{{Node: "gpu-node-3", GPUs: []int{0, 1}}}
	out, err = e.Resume(ctx, tgt)
	if err != nil || !out.Done {
		t.Fatalf("Resume (placed) = %+v, %v", out, err)
	}
	got, err = admin.kube.BatchV1().Jobs(liveNS).Get(ctx, j.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.Suspend == nil || *got.Spec.Suspend {
		t.Errorf("Job after resume: suspend %v, want false", got.Spec.Suspend)
	}
	if hosts := affinityHosts(got.Spec.Template.Spec.Affinity); !slices.Equal(hosts, []string{"gpu-node-3"}) {
		t.Errorf("Job after resume: node affinity on %v, want [gpu-node-3]", hosts)
	}
	out, err = e.Stop(ctx, tgt, false, 5*time.Second)
	if err != nil || !out.Done {
		t.Fatalf("Stop (cancel) = %+v, %v", out, err)
	}
	if _, err := admin.kube.BatchV1().Jobs(liveNS).Get(ctx, j.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Job after cancel: %v, want not found", err)
	}
}

// liveWorkload: Kueue's real Workload CRD; stop deactivates the Workload, resume
// with a placement writes the affinity on its suspended Job and reactivates it.
func liveWorkload(t *testing.T, e *kubernetes.Executor, admin, asSA clients) {
	ctx := t.Context()
	j, p := liveJob(t, admin, "k-train", true, map[string]string{"kueue.x-k8s.io/queue-name": "gpu"})
	gvr := schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta1", Resource: "workloads"}
	wl := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload",
		"metadata": map[string]any{"name": "job-k-train-1", "labels": map[string]any{"kueue.x-k8s.io/job-uid": string(j.UID)}},
		"spec": map[string]any{"active": true, "queueName": "gpu", "podSets": []any{map[string]any{
			"name": "main", "count": int64(1),
			"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "train", "image": "busybox"}}}},
		}}},
	}}
	if _, err := admin.dyn.Resource(gvr).Namespace(liveNS).Create(ctx, wl, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Workload with Kueue %s's CRD: %v", kueueVersion, err)
	}
	active := func() bool {
		got, err := admin.dyn.Resource(gvr).Namespace(liveNS).Get(ctx, "job-k-train-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		a, _, _ := unstructured.NestedBool(got.Object, "spec", "active")
		return a
	}
	out, err := e.Stop(ctx, jobKey(p), true, 5*time.Second)
	if err != nil || !out.Done || active() {
		t.Fatalf("Stop (requeue) = %+v, %v; Workload active %v, want false", out, err, active())
	}
	tgt := jobKey(p)
	tgt.Placement = []executor.NodeGPUs{{Node: "gpu-node-7", GPUs: []int{0}}}
	out, err = e.Resume(ctx, tgt)
	if err != nil || !out.Done || !active() {
		t.Fatalf("Resume (placed) = %+v, %v; Workload active %v, want true", out, err, active())
	}
	got, err := admin.kube.BatchV1().Jobs(liveNS).Get(ctx, j.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if hosts := affinityHosts(got.Spec.Template.Spec.Affinity); !slices.Equal(hosts, []string{"gpu-node-7"}) {
		t.Errorf("Job behind the Workload after resume: node affinity on %v, want [gpu-node-7]", hosts)
	}
	// The executor never deletes a Workload (cancel deletes its Job); the chart
	// grants no delete on workloads.
	if err := asSA.dyn.Resource(gvr).Namespace(liveNS).Delete(ctx, "job-k-train-1", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("deleting a Workload as the scheduler: %v, want 403", err)
	}
}

// affinityHosts is the hostnames of the required node affinity's "In" terms.
func affinityHosts(a *corev1.Affinity) []string {
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil
	}
	var out []string
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, r := range term.MatchExpressions {
			if r.Key == corev1.LabelHostname && r.Operator == corev1.NodeSelectorOpIn {
				out = append(out, r.Values...)
			}
		}
	}
	return out
}

// gone checks the pod is deleted: a pod no node ever ran is removed at once.
func gone(t *testing.T, c clients, p *corev1.Pod) {
	t.Helper()
	got, err := c.kube.CoreV1().Pods(p.Namespace).Get(t.Context(), p.Name, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) && (err != nil || got.DeletionTimestamp == nil) {
		t.Errorf("pod %s/%s after eviction: %v, deletion %v; want gone", p.Namespace, p.Name, err, got.DeletionTimestamp)
	}
}

// deleteAll deletes what applyChart applied, so the next mode's RBAC starts clean.
func deleteAll(t *testing.T, c clients, objs []*unstructured.Unstructured) {
	ctx := context.Background() // the test's context has ended
	for _, u := range objs {
		gvk := u.GroupVersionKind()
		res := map[string]string{"ServiceAccount": "serviceaccounts", "ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings", "Role": "roles", "RoleBinding": "rolebindings"}[gvk.Kind]
		gvr := schema.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: res}
		var err error
		if u.GetNamespace() != "" {
			err = c.dyn.Resource(gvr).Namespace(u.GetNamespace()).Delete(ctx, u.GetName(), metav1.DeleteOptions{})
		} else {
			err = c.dyn.Resource(gvr).Delete(ctx, u.GetName(), metav1.DeleteOptions{})
		}
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete %s %s: %v", gvk.Kind, u.GetName(), err)
		}
	}
}
