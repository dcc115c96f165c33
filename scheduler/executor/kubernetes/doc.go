// Package kubernetes is the scheduler's executor for jobs that run as Kubernetes
// pods, through client-go.
//
// In: an executor.Target naming a pod — by Namespace and Pod, or only by gpupool's
// job key "k8s/<namespace>/<pod uid>" ("k8s/_/<uid>" when the namespace is unknown),
// in which case the pod is found by listing pods and matching metadata.uid — and,
// when known, its owning batch/v1 Job (Target.K8sJob) and Kueue Workload
// (Target.KueueWorkload). Out: API calls, and an executor.Outcome saying whether they
// changed anything.
//
// Stop with requeue, in this order of preference:
//
//   - a Kueue Workload (kueue.x-k8s.io, spec.active) admits the pod or its Job:
//     merge-patch {"spec":{"active":false}}; Kueue evicts it and keeps it, and it
//     runs again when reactivated. Kueue comes before the Job because Kueue owns a
//     managed Job's spec.suspend and would undo a suspend it did not make.
//   - a batch/v1 Job owns the pod: merge-patch {"spec":{"suspend":true}}; the Job
//     controller deletes the Job's pods (each with its own
//     terminationGracePeriodSeconds: grace does not apply) and keeps the Job.
//   - otherwise the pod is evicted through the Eviction API (policy/v1), which
//     honours PodDisruptionBudgets; grace becomes DeleteOptions.GracePeriodSeconds.
//     A 429 from the API (a PodDisruptionBudget allows no disruption now) returns
//     an error wrapping ErrBlockedByPDB, which IsRetryable reports as retryable.
//
// Stop without requeue deletes the Job (propagation Background, so the Job's pods and
// its Kueue Workload are garbage-collected) or, for a pod with no Job, evicts it.
// Resume merge-patches spec.active=true on the Workload or spec.suspend=false on the
// Job; an evicted bare pod cannot be resumed (ErrUnsupported). Kill is for the node
// agent (processes are not Kubernetes objects): ErrUnsupported.
//
// A resume whose target carries the scheduler's placement (Target.Placement, a
// model that lists nodes) runs the job on those nodes: the Job's pod template
// gets a required node affinity "kubernetes.io/hostname In <nodes>", ANDed into
// each of the owner's own terms, and the annotation gpupool.io/placed-nodes
// naming them (a later resume replaces that expression, not the owner's). A
// suspended Job gets it in the same merge patch that unsuspends it (Kubernetes
// lets a suspended, not started Job's scheduling directives change); under
// Kueue the Job gets it first and the Workload is then reactivated, so the
// Workload Kueue builds from the Job carries it. GPU indices are not expressed:
// the device plugin picks the GPUs on the node.
//
// executor.KubernetesConfig.Mode narrows the mechanisms: "auto" (all three; a
// Workload is looked up only for pods and Jobs that carry Kueue's labels),
// "kueue_workload" (all three, and a Workload is looked up for every pod, for
// clusters where Kueue manages jobs without a queue-name label), "suspend_job" (Job,
// else eviction; Kueue is never touched, so no RBAC on workloads is needed) and
// "evict" (eviction only).
//
// Every call is idempotent: a Job already suspended, a Workload already inactive, a
// pod already terminating or finished return Done false and make no change. A pod
// that cannot be found, with no Job or Workload to act on instead, is
// executor.ErrNotFound.
package kubernetes
