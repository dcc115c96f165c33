package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpupool/gpupool/scheduler/executor"
)

// The scheduler's placement on a Job's pod template: a required node affinity
// on the nodes' hostnames, and an annotation naming them, so that a later
// resume replaces that expression rather than adding a second one.
const (
	labelHostname         = corev1.LabelHostname // kubernetes.io/hostname
	annotationPlacedNodes = "gpupool.io/placed-nodes"
)

// placedAffinity is the required node affinity of tmpl with the nodes added:
// the expression "kubernetes.io/hostname In nodes" is ANDed into each of the
// template's own terms (terms are ORed, a term's expressions ANDed), so the
// pods keep the constraints their owner wrote and run only on those nodes. The
// expression an earlier resume added (the annotation names its nodes) is
// replaced.
func placedAffinity(tmpl corev1.PodTemplateSpec, nodes []string) *corev1.NodeSelector {
	ours := corev1.NodeSelectorRequirement{Key: labelHostname, Operator: corev1.NodeSelectorOpIn, Values: slices.Clone(nodes)}
	var prev []string
	if v := tmpl.Annotations[annotationPlacedNodes]; v != "" {
		prev = strings.Split(v, ",")
	}
	var terms []corev1.NodeSelectorTerm
	if a := tmpl.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		terms = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	}
	out := &corev1.NodeSelector{}
	for _, t := range terms {
		t = *t.DeepCopy()
		t.MatchExpressions = slices.DeleteFunc(t.MatchExpressions, func(r corev1.NodeSelectorRequirement) bool {
			return prev != nil && r.Key == labelHostname && r.Operator == corev1.NodeSelectorOpIn && slices.Equal(r.Values, prev)
		})
		t.MatchExpressions = append(t.MatchExpressions, ours)
		out.NodeSelectorTerms = append(out.NodeSelectorTerms, t)
	}
	if len(out.NodeSelectorTerms) == 0 {
		out.NodeSelectorTerms = []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{ours}}}
	}
	return out
}

// placementPatch is the JSON merge patch that puts the Job's pods on nodes
// (and, with unsuspend, lets the Job run in the same update). A merge patch
// replaces the required affinity whole, which is why it carries the owner's
// terms too.
func placementPatch(j *batchv1.Job, nodes []string, unsuspend bool) ([]byte, error) {
	type nodeAffinity struct {
		Required *corev1.NodeSelector `json:"requiredDuringSchedulingIgnoredDuringExecution"`
	}
	spec := map[string]any{
		"template": map[string]any{
			"metadata": map[string]any{"annotations": map[string]string{annotationPlacedNodes: strings.Join(nodes, ",")}},
			"spec":     map[string]any{"affinity": map[string]any{"nodeAffinity": nodeAffinity{Required: placedAffinity(j.Spec.Template, nodes)}}},
		},
	}
	if unsuspend {
		spec["suspend"] = false
	}
	return json.Marshal(map[string]any{"spec": spec})
}

// placeJob writes the placement on a suspended Job's pod template, unsuspending
// it in the same patch when unsuspend. Kubernetes accepts a change of a Job's
// node affinity only while it is suspended and not started (status.startTime
// unset: the Job controller clears it on suspension).
func (e *Executor) placeJob(ctx context.Context, j *batchv1.Job, nodes []string, unsuspend bool) (executor.Outcome, error) {
	name := "Job " + j.Namespace + "/" + j.Name
	patch, err := placementPatch(j, nodes, unsuspend)
	if err != nil {
		return executor.Outcome{}, fmt.Errorf("placement patch for %s: %w", name, err)
	}
	_, err = e.kube.BatchV1().Jobs(j.Namespace).Patch(ctx, j.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: fieldManager})
	switch {
	case apierrors.IsNotFound(err):
		return executor.Outcome{}, fmt.Errorf("%w: %s", executor.ErrNotFound, name)
	case err != nil:
		return executor.Outcome{}, fmt.Errorf("patch %s node affinity to %s: %w", name, strings.Join(nodes, ","), err)
	}
	verb := "placed on " + strings.Join(nodes, ",")
	if unsuspend {
		verb = "resumed on " + strings.Join(nodes, ",")
	}
	return executor.Outcome{Done: true, Detail: name + " " + verb}, nil
}

// resumePlaced resumes r on t's nodes: a suspended Job gets the node affinity
// and is unsuspended in one patch; a Kueue Workload's Job gets the affinity
// first (Kueue builds the Workload's pod sets from the Job, and kube-scheduler
// holds the pods to the nodes), then the Workload is reactivated. A Workload
// with no Job found is reactivated without the placement, and says so.
func (e *Executor) resumePlaced(ctx context.Context, r *ref, nodes []string) (executor.Outcome, error) {
	suspended := r.job != nil && r.job.Spec.Suspend != nil && *r.job.Spec.Suspend
	switch {
	case r.wl != nil:
		var placed []string
		if suspended && !jobFinished(r.job) && r.job.DeletionTimestamp == nil {
			out, err := e.placeJob(ctx, r.job, nodes, false)
			if err != nil {
				return out, err
			}
			placed = append(placed, out.Detail)
		}
		out, err := e.setWorkloadActive(ctx, r.wl, true)
		if err != nil {
			return out, err
		}
		if placed == nil {
			out.Detail += "; placement on " + strings.Join(nodes, ",") + " not carried: no suspended Job behind the Workload"
		} else {
			out.Detail = strings.Join(append(placed, out.Detail), "; ")
		}
		return out, nil
	case r.job != nil && suspended && !jobFinished(r.job) && r.job.DeletionTimestamp == nil:
		return e.placeJob(ctx, r.job, nodes, true)
	case r.job != nil:
		return e.setJobSuspend(ctx, r.job, false) // says why nothing changes
	}
	return executor.Outcome{}, fmt.Errorf("%w: pod %s/%s has no Job or Kueue Workload to resume", executor.ErrUnsupported, r.pod.Namespace, r.pod.Name)
}
