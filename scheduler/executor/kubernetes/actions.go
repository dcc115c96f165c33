package kubernetes

import (
	"context"
	"fmt"
	"math"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/gpupool/gpupool/scheduler/executor"
)

// fieldManager names gpupool in the objects' managedFields.
const fieldManager = "gpupool"

// The JSON merge patches sent; merge patches work on Jobs and on CRDs alike.
var (
	patchSuspend    = []byte(`{"spec":{"suspend":true}}`)
	patchUnsuspend  = []byte(`{"spec":{"suspend":false}}`)
	patchDeactivate = []byte(`{"spec":{"active":false}}`)
	patchActivate   = []byte(`{"spec":{"active":true}}`)
)

// setJobSuspend sets the Job's spec.suspend unless it already has that value.
func (e *Executor) setJobSuspend(ctx context.Context, j *batchv1.Job, suspend bool) (executor.Outcome, error) {
	name := "Job " + j.Namespace + "/" + j.Name
	cur := j.Spec.Suspend != nil && *j.Spec.Suspend
	switch {
	case jobFinished(j):
		return executor.Outcome{Detail: name + " already finished"}, nil
	case j.DeletionTimestamp != nil:
		return executor.Outcome{Detail: name + " already being deleted"}, nil
	case cur && suspend:
		return executor.Outcome{Detail: name + " already suspended"}, nil
	case !cur && !suspend:
		return executor.Outcome{Detail: name + " not suspended"}, nil
	}
	patch, verb := patchSuspend, "suspended"
	if !suspend {
		patch, verb = patchUnsuspend, "resumed"
	}
	_, err := e.kube.BatchV1().Jobs(j.Namespace).Patch(ctx, j.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: fieldManager})
	switch {
	case apierrors.IsNotFound(err):
		return executor.Outcome{}, fmt.Errorf("%w: %s", executor.ErrNotFound, name)
	case err != nil:
		return executor.Outcome{}, fmt.Errorf("patch %s spec.suspend=%t: %w", name, suspend, err)
	}
	return executor.Outcome{Done: true, Detail: name + " " + verb}, nil
}

// setWorkloadActive sets the Workload's spec.active unless it already has that value.
func (e *Executor) setWorkloadActive(ctx context.Context, wl *unstructured.Unstructured, active bool) (executor.Outcome, error) {
	name := "Workload " + wl.GetNamespace() + "/" + wl.GetName()
	cur, found, err := unstructured.NestedBool(wl.Object, "spec", "active")
	if err != nil {
		return executor.Outcome{}, fmt.Errorf("read %s spec.active: %w", name, err)
	}
	if !found {
		cur = true // Kueue's default
	}
	switch {
	case workloadFinished(wl):
		return executor.Outcome{Detail: name + " already finished"}, nil
	case wl.GetDeletionTimestamp() != nil:
		return executor.Outcome{Detail: name + " already being deleted"}, nil
	case cur == active && active:
		return executor.Outcome{Detail: name + " already active"}, nil
	case cur == active:
		return executor.Outcome{Detail: name + " already inactive"}, nil
	}
	patch, verb := patchDeactivate, "deactivated"
	if active {
		patch, verb = patchActivate, "reactivated"
	}
	_, err = e.dyn.Resource(e.wlGVR).Namespace(wl.GetNamespace()).Patch(ctx, wl.GetName(), types.MergePatchType, patch, metav1.PatchOptions{FieldManager: fieldManager})
	switch {
	case apierrors.IsNotFound(err):
		return executor.Outcome{}, fmt.Errorf("%w: %s", executor.ErrNotFound, name)
	case err != nil:
		return executor.Outcome{}, fmt.Errorf("patch %s spec.active=%t: %w", name, active, err)
	}
	return executor.Outcome{Done: true, Detail: name + " " + verb}, nil
}

// evict asks the Eviction API to delete the pod, which honours its
// PodDisruptionBudgets.
func (e *Executor) evict(ctx context.Context, p *corev1.Pod, grace time.Duration) (executor.Outcome, error) {
	name := "pod " + p.Namespace + "/" + p.Name
	switch {
	case p.DeletionTimestamp != nil:
		return executor.Outcome{Detail: name + " already terminating"}, nil
	case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
		return executor.Outcome{Detail: name + " already finished"}, nil
	}
	g := graceSeconds(grace)
	uid := p.UID
	ev := &policyv1.Eviction{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
		// The UID precondition keeps a later pod of the same name from being evicted.
		DeleteOptions: &metav1.DeleteOptions{GracePeriodSeconds: &g, Preconditions: &metav1.Preconditions{UID: &uid}},
	}
	err := e.postEviction(ctx, ev)
	switch {
	case apierrors.IsNotFound(err):
		return executor.Outcome{Detail: name + " already gone"}, nil
	case apierrors.IsTooManyRequests(err):
		return executor.Outcome{}, fmt.Errorf("evict %s: %w (retry later; see kubectl get pdb -n %s): %w", name, ErrBlockedByPDB, p.Namespace, err)
	case err != nil:
		return executor.Outcome{}, fmt.Errorf("evict %s: %w", name, err)
	}
	return executor.Outcome{Done: true, Detail: fmt.Sprintf("%s evicted (grace %ds)", name, g)}, nil
}

// postEviction creates the Eviction with no retry. client-go retries a 429 that
// carries Retry-After, and the Eviction API answers a budget that allows no
// disruption with 429 and Retry-After: 10, so the typed Evict would wait out the
// request timeout and fail with a bare deadline instead of the budget's answer
// (found against a real API server, TestLiveAPIServer). Fake clientsets have no
// REST client and get the typed call.
func (e *Executor) postEviction(ctx context.Context, ev *policyv1.Eviction) error {
	if rc, ok := e.kube.PolicyV1().RESTClient().(*rest.RESTClient); ok && rc != nil {
		return rc.Post().AbsPath("/api/v1").Namespace(ev.Namespace).Resource("pods").Name(ev.Name).SubResource("eviction").
			MaxRetries(0).Body(ev).Do(ctx).Error()
	}
	return e.kube.PolicyV1().Evictions(ev.Namespace).Evict(ctx, ev)
}

// deleteJob deletes the Job; the garbage collector then deletes its pods (each with
// its own grace period) and its Kueue Workload.
func (e *Executor) deleteJob(ctx context.Context, j *batchv1.Job) (executor.Outcome, error) {
	name := "Job " + j.Namespace + "/" + j.Name
	switch {
	case jobFinished(j):
		return executor.Outcome{Detail: name + " already finished"}, nil
	case j.DeletionTimestamp != nil:
		return executor.Outcome{Detail: name + " already being deleted"}, nil
	}
	bg := metav1.DeletePropagationBackground
	uid := j.UID
	err := e.kube.BatchV1().Jobs(j.Namespace).Delete(ctx, j.Name, metav1.DeleteOptions{
		PropagationPolicy: &bg, Preconditions: &metav1.Preconditions{UID: &uid},
	})
	switch {
	case apierrors.IsNotFound(err):
		return executor.Outcome{Detail: name + " already gone"}, nil
	case err != nil:
		return executor.Outcome{}, fmt.Errorf("delete %s: %w", name, err)
	}
	return executor.Outcome{Done: true, Detail: name + " deleted"}, nil
}

// graceSeconds rounds grace up to whole seconds, at least 1: a grace period of 0
// would force-delete the pod object while its containers may still hold the GPU.
func graceSeconds(grace time.Duration) int64 {
	return max(1, int64(math.Ceil(grace.Seconds())))
}

// jobFinished reports whether the Job has completed or failed.
func jobFinished(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// workloadFinished reports whether the Workload has the condition Finished=True.
func workloadFinished(wl *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(wl.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == "Finished" && m["status"] == "True" {
			return true
		}
	}
	return false
}
