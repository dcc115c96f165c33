package kubernetes

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	k8s "k8s.io/client-go/kubernetes"

	"github.com/gpupool/gpupool/scheduler/executor"
	"github.com/gpupool/gpupool/scheduler/executor/kubernetes/kubetest"
)

// TestLiveAPIServer runs the executor against a real kube-apiserver (admin
// identity; deploy/helm's TestExecutorWithChartRBAC runs it as the chart's
// ServiceAccount) for what only the real server decides: the Eviction API
// against a PodDisruptionBudget, the Job validation that allows a node
// affinity change only on a suspended Job that has not started, and the owner
// of a namespace with nothing in it yet.
func TestLiveAPIServer(t *testing.T) {
	srv := kubetest.Start(t)
	kube, err := k8s.NewForConfig(srv.Admin)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(srv.Admin)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	const ns = "team-live"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// What the controller-manager would create: the namespace's default ServiceAccount.
	if _, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := executor.DefaultKubernetesConfig()
	cfg.Namespaces = map[string]executor.NamespaceOwner{ns: {Team: "live", Pool: "a100"}}
	e, err := New(cfg, WithClients(kube, dyn))
	if err != nil {
		t.Fatal(err)
	}
	spec := corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}

	t.Run("eviction honours the PodDisruptionBudget", func(t *testing.T) {
		p, err := kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "serve", Labels: map[string]string{"app": "serve"}}, Spec: spec}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// A running, ready pod (the kubelet would say so): the Eviction API lets
		// pending pods, and unready ones while the budget is met, go regardless.
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		if p, err = kube.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		one := intstr.FromInt32(1)
		pdb, err := kube.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Name: "serve"},
			Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "serve"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// The executor finds a pod by UID in a list served from the watch cache,
		// which may not have a pod created a moment ago yet.
		err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			l, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
			return err == nil && len(l.Items) == 1 && l.Items[0].UID == p.UID, err
		})
		if err != nil {
			t.Fatalf("pod serve never in the watch cache: %v", err)
		}
		tgt := executor.Target{Job: "k8s/" + ns + "/" + string(p.UID)}
		_, err = e.Stop(ctx, tgt, true, time.Second)
		if !errors.Is(err, ErrBlockedByPDB) || !IsRetryable(err) {
			t.Fatalf("Stop with a budget allowing no disruption: %v, want retryable ErrBlockedByPDB", err)
		}
		// The disruption controller's verdict, written as it would: one disruption allowed.
		pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, DisruptionsAllowed: 1, CurrentHealthy: 2, DesiredHealthy: 1, ExpectedPods: 2}
		if _, err := kube.PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(ctx, pdb, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		out, err := e.Stop(ctx, tgt, true, time.Second)
		if err != nil || !out.Done {
			t.Fatalf("Stop with a budget allowing one: %+v, %v", out, err)
		}
		if got, err := kube.CoreV1().Pods(ns).Get(ctx, "serve", metav1.GetOptions{}); err == nil && got.DeletionTimestamp == nil {
			t.Errorf("pod serve still there and not terminating after its eviction")
		}
	})

	t.Run("placement on a started Job is refused", func(t *testing.T) {
		yes := true
		j, err := kube.BatchV1().Jobs(ns).Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "started"},
			Spec: batchv1.JobSpec{Suspend: &yes, Template: corev1.PodTemplateSpec{Spec: spec}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// The Job controller clears startTime when it suspends a Job; a Job that
		// has it still (the controller not caught up) may not change its pods' nodes.
		now := metav1.Now()
		j.Status.StartTime = &now
		if _, err := kube.BatchV1().Jobs(ns).UpdateStatus(ctx, j, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		tgt := executor.Target{Namespace: ns, K8sJob: "started", Placement: []executor.NodeGPUs{{Node: "gpu-node-1"}}}
		out, err := e.Resume(ctx, tgt)
		if err == nil || out.Done || !strings.Contains(err.Error(), "node affinity") {
			t.Fatalf("Resume placed on a started Job: %+v, %v; want the server's refusal", out, err)
		}
		got, err := kube.BatchV1().Jobs(ns).Get(ctx, "started", metav1.GetOptions{})
		if err != nil || got.Spec.Suspend == nil || !*got.Spec.Suspend {
			t.Errorf("the refused Job: suspend %v, %v; want still suspended (one patch, all or nothing)", got.Spec.Suspend, err)
		}
		// Once the controller has cleared startTime, the same resume goes through.
		got.Status.StartTime = nil
		if _, err := kube.BatchV1().Jobs(ns).UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if out, err := e.Resume(ctx, tgt); err != nil || !out.Done {
			t.Fatalf("Resume placed after startTime cleared: %+v, %v", out, err)
		}
	})

	t.Run("owner of an empty namespace", func(t *testing.T) {
		o, err := e.Owner(ctx, executor.Target{Namespace: ns, Job: "k8s/" + ns + "/no-such-uid"})
		if !errors.Is(err, executor.ErrNotFound) || o.Team != "live" || o.Pool != "a100" {
			t.Errorf("Owner = %+v, %v; want team live, pool a100, and ErrNotFound", o, err)
		}
		_, err = e.Owner(ctx, executor.Target{Namespace: "unmapped", Job: "k8s/unmapped/no-such-uid"})
		if !errors.Is(err, executor.ErrUnmapped) {
			t.Errorf("Owner in an unmapped namespace: %v, want ErrUnmapped", err)
		}
	})
}
