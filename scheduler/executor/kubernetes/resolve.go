package kubernetes

import (
	"context"
	"fmt"
	"sort"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gpupool/gpupool/scheduler/executor"
	"github.com/gpupool/gpupool/schemas"
)

// Labels and annotations read to connect a pod to its Job and Kueue Workload.
const (
	// Set by the Job controller on its pods (the legacy keys on older clusters).
	labelJobName             = "batch.kubernetes.io/job-name"
	labelJobNameLegacy       = "job-name"
	labelControllerUID       = "batch.kubernetes.io/controller-uid"
	labelControllerUIDLegacy = "controller-uid"
	// Kueue: a managed Job or pod carries its queue; a plain pod is marked managed.
	labelQueueName = "kueue.x-k8s.io/queue-name"
	labelManaged   = "kueue.x-k8s.io/managed"
	// keyWorkloadName names the Workload on a pod (label) or Job (annotation) where a
	// deployment records it; Kueue's own prebuilt-workload label does the same.
	keyWorkloadName       = "kueue.x-k8s.io/workload-name"
	labelPrebuiltWorkload = "kueue.x-k8s.io/prebuilt-workload-name"
	// labelWorkloadOwnerUID is on each Workload: the UID of the Job (or plain pod)
	// it was made for.
	labelWorkloadOwnerUID = "kueue.x-k8s.io/job-uid"
)

// ref is what a Target resolved to; any of pod, job and wl may be nil.
type ref struct {
	ns  string
	pod *corev1.Pod
	job *batchv1.Job
	wl  *unstructured.Unstructured
}

// accepts refuses targets that are not Kubernetes jobs.
func accepts(t executor.Target) error {
	if t.Source != "" && t.Source != schemas.SourceKubernetes {
		return fmt.Errorf("%w: source %q is not kubernetes", executor.ErrUnsupported, t.Source)
	}
	if t.Pod == "" && t.K8sJob == "" && t.KueueWorkload == "" && !strings.HasPrefix(t.Job, "k8s/") {
		return fmt.Errorf("%w: no pod, Job, Workload or k8s/<namespace>/<pod uid> job key", executor.ErrUnsupported)
	}
	return nil
}

// parseKey splits "k8s/<namespace>/<pod uid>"; a namespace of "_" (unknown) is "".
func parseKey(key string) (ns, uid string) {
	rest, ok := strings.CutPrefix(key, "k8s/")
	if !ok {
		return "", ""
	}
	ns, uid, ok = strings.Cut(rest, "/")
	if !ok || strings.Contains(uid, "/") {
		return "", ""
	}
	if ns == "_" {
		ns = ""
	}
	return ns, uid
}

// describe names a target in errors.
func describe(t executor.Target) string {
	switch {
	case t.Job != "":
		return t.Job
	case t.Pod != "":
		return "pod " + t.Namespace + "/" + t.Pod
	case t.K8sJob != "":
		return "Job " + t.Namespace + "/" + t.K8sJob
	}
	return "Workload " + t.Namespace + "/" + t.KueueWorkload
}

// resolve finds the target's pod, Job and Workload, as far as KubernetesConfig.Mode needs
// them. It fails with ErrNotFound when it finds none of the three.
func (e *Executor) resolve(ctx context.Context, t executor.Target) (*ref, error) {
	keyNS, uid := parseKey(t.Job)
	r := &ref{ns: t.Namespace}
	if r.ns == "" {
		r.ns = keyNS
	}
	if err := e.findPod(ctx, r, t.Pod, uid); err != nil {
		return nil, err
	}
	// The pod's own labels are authoritative; the target's are what was known of
	// it, and all there is once the pod is gone (a suspended Job deletes its pods).
	labels := t.Labels
	if r.pod != nil {
		labels = r.pod.Labels
	}
	if useJob(e.cfg) {
		if err := e.findJob(ctx, r, t.K8sJob, labels); err != nil {
			return nil, err
		}
	}
	if useKueue(e.cfg) && e.dyn != nil {
		if err := e.findWorkload(ctx, r, t.KueueWorkload, labels, uid); err != nil {
			return nil, err
		}
	}
	if r.pod == nil && r.job == nil && r.wl == nil {
		what := "pod"
		if uid != "" {
			what += " with UID " + uid
		}
		if t.Pod != "" {
			what += " " + t.Pod
		}
		if r.ns != "" {
			what += " in namespace " + r.ns
		}
		return nil, fmt.Errorf("%w: no %s, and no Job or Workload named", executor.ErrNotFound, what)
	}
	return r, nil
}

// findPod gets the pod by name, or lists the namespace (all namespaces when it is
// unknown) for the one with the job key's UID.
func (e *Executor) findPod(ctx context.Context, r *ref, name, uid string) error {
	if name != "" && r.ns != "" {
		p, err := e.kube.CoreV1().Pods(r.ns).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return fmt.Errorf("get pod %s/%s: %w", r.ns, name, err)
		case uid != "" && string(p.UID) != uid:
			return nil // the name now belongs to a later pod
		}
		r.pod = p
		return nil
	}
	if uid == "" {
		return nil
	}
	// Pods have no field selector on metadata.uid; ResourceVersion "0" serves the
	// list from the API server's cache.
	list, err := e.kube.CoreV1().Pods(r.ns).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return fmt.Errorf("list pods in namespace %q: %w", r.ns, err)
	}
	for i := range list.Items {
		if string(list.Items[i].UID) == uid {
			r.pod = &list.Items[i]
			r.ns = r.pod.Namespace
			return nil
		}
	}
	return nil
}

// findJob gets the batch/v1 Job named by the target, owning the pod, or (the pod
// gone) named in the target's labels.
func (e *Executor) findJob(ctx context.Context, r *ref, explicit string, labels map[string]string) error {
	name := explicit
	if name == "" && r.pod != nil {
		for _, o := range r.pod.OwnerReferences {
			if o.Kind == "Job" && o.APIVersion == "batch/v1" {
				name = o.Name
			}
		}
	}
	if name == "" && r.pod == nil {
		name = first(labels[labelJobName], labels[labelJobNameLegacy])
	}
	if name == "" || r.ns == "" {
		return nil
	}
	j, err := e.kube.BatchV1().Jobs(r.ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) && explicit != "":
		return fmt.Errorf("%w: Job %s/%s", executor.ErrNotFound, r.ns, name)
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("get Job %s/%s: %w", r.ns, name, err)
	}
	r.job = j
	return nil
}

// findWorkload gets the Kueue Workload named by the target or by a label or
// annotation, or — for a pod or Job that Kueue manages — the one whose job-uid
// label is the Job's (or plain pod's) UID.
func (e *Executor) findWorkload(ctx context.Context, r *ref, explicit string, labels map[string]string, podUID string) error {
	if r.ns == "" {
		return nil
	}
	var jobLabels, jobAnns map[string]string
	if r.job != nil {
		jobLabels, jobAnns = r.job.Labels, r.job.Annotations
	}
	name := first(explicit, labels[keyWorkloadName], jobAnns[keyWorkloadName],
		jobLabels[labelPrebuiltWorkload], labels[labelPrebuiltWorkload])
	wls := e.dyn.Resource(e.wlGVR).Namespace(r.ns)
	if name != "" {
		wl, err := wls.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err) && explicit != "":
			return fmt.Errorf("%w: Workload %s/%s", executor.ErrNotFound, r.ns, name)
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return fmt.Errorf("get Workload %s/%s: %w", r.ns, name, err)
		}
		r.wl = wl
		return nil
	}
	managed := labels[labelQueueName] != "" || labels[labelManaged] == "true" ||
		jobLabels[labelQueueName] != "" || jobAnns[labelQueueName] != ""
	if !managed && e.cfg.Mode != executor.KubernetesModeKueueWorkload {
		return nil
	}
	var owner string
	switch {
	case r.job != nil:
		owner = string(r.job.UID)
	case r.pod != nil && first(r.pod.Labels[labelJobName], r.pod.Labels[labelJobNameLegacy]) == "":
		owner = string(r.pod.UID)
	case r.pod == nil:
		owner = first(labels[labelControllerUID], labels[labelControllerUIDLegacy], podUID)
	}
	if owner == "" {
		return nil
	}
	list, err := wls.List(ctx, metav1.ListOptions{LabelSelector: labelWorkloadOwnerUID + "=" + owner})
	switch {
	case apierrors.IsNotFound(err):
		return nil // Kueue is not installed
	case err != nil:
		return fmt.Errorf("list Workloads in %s for owner %s: %w", r.ns, owner, err)
	case len(list.Items) == 0:
		return nil
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].GetName() < list.Items[j].GetName() })
	r.wl = &list.Items[0]
	return nil
}

func first(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
