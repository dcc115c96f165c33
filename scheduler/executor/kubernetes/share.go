package kubernetes

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpupool/gpupool/scheduler/executor"
)

// checkShare: a job the scheduler placed on a share of one GPU (issue 44)
// must reach the device plugin as the cluster's sharing resource of its mode
// (KubernetesConfig.SharedResources: time-sliced replicas, MPS, or a
// fractional plugin's resource), not as a whole GPU. Kubernetes does not let
// a Job's container resources change once it exists, so the executor cannot
// rewrite them: it checks that the Job (or the bare pod) asks for that
// resource, and refuses the resume (ErrUnsupported) when it does not, since
// the pod would otherwise take a whole GPU the scheduler counts as shared. It
// returns what to add to the outcome's detail. A Workload with no Job or pod
// found, and a mode the configuration lists no resource for, are not checked.
func (e *Executor) checkShare(t executor.Target, r *ref) (string, error) {
	sh, ok := t.Share()
	if !ok {
		return "", nil
	}
	want := e.cfg.SharedResources[sh.Mode]
	var spec *corev1.PodSpec
	name := ""
	switch {
	case r.job != nil:
		spec, name = &r.job.Spec.Template.Spec, "Job "+r.job.Namespace+"/"+r.job.Name
	case r.pod != nil:
		spec, name = &r.pod.Spec, "pod "+r.pod.Namespace+"/"+r.pod.Name
	}
	if want == "" || spec == nil {
		return "", nil
	}
	asked := askedResources(spec)
	if !slices.Contains(asked, want) {
		return "", fmt.Errorf("%w: %s was placed on a %d/1000 %s share of GPU %d but asks no %s (its containers ask %s); Kubernetes does not let a Job's resources change: submit it asking %s, the cluster's %s sharing resource (scheduler.kubernetes.shared_resources)",
			executor.ErrUnsupported, name, sh.Fraction, sh.Mode, sh.GPU, want, cmpOr(strings.Join(asked, ", "), "none"), want, sh.Mode)
	}
	return fmt.Sprintf("; shares GPU %d (%d/1000, %s) as %s", sh.GPU, sh.Fraction, sh.Mode, want), nil
}

// askedResources lists the resources spec's containers (init containers too)
// limit or request, sorted.
func askedResources(spec *corev1.PodSpec) []string {
	var out []string
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for _, c := range cs {
			for _, rl := range []corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
				for n := range rl {
					if s := string(n); !slices.Contains(out, s) {
						out = append(out, s)
					}
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
