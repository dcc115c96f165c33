package kubernetes

import (
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/gpupool/gpupool/scheduler/executor"
)

// placed is a target resumed onto two nodes.
var placed = executor.Target{Namespace: ns, K8sJob: "train", Placement: []executor.NodeGPUs{
	{Node: "h0", GPUs: []int{0, 1, 2, 3}}, {Node: "h1", GPUs: []int{2, 3}},
}}

func hostnameIn(nodes ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: nodes}
}

func zoneIn(z string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{z}}
}

// withTerms gives the Job's pod template required node affinity terms and
// annotations.
func withTerms(j *batchv1.Job, ann map[string]string, terms ...corev1.NodeSelectorTerm) *batchv1.Job {
	j.Spec.Template.Annotations = ann
	j.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms},
	}}
	return j
}

// terms is the Job's required node affinity as written (one line per term).
func terms(j *batchv1.Job) []string {
	a := j.Spec.Template.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil
	}
	var out []string
	for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		var ex []string
		for _, r := range t.MatchExpressions {
			ex = append(ex, r.Key+" "+string(r.Operator)+" "+strings.Join(r.Values, ","))
		}
		out = append(out, strings.Join(ex, " && "))
	}
	return out
}

// TestResumeCarriesThePlacement: a resumed Job runs on the nodes the scheduler
// placed it on (required node affinity on kubernetes.io/hostname, ANDed into
// its owner's terms), set in the patch that unsuspends it; under Kueue the Job
// gets the affinity and the Workload is reactivated.
func TestResumeCarriesThePlacement(t *testing.T) {
	const placedOn = "kubernetes.io/hostname In h0,h1"
	for _, tc := range []struct {
		name        string
		job         *batchv1.Job
		wls         []runtime.Object
		target      executor.Target
		wantDone    bool
		wantSuspend bool
		wantTerms   []string
		wantAnn     string
		wantDyn     []string
		wantDetail  string
	}{
		{
			name:      "suspended Job: affinity and unsuspend in one patch",
			job:       job(true, nil),
			target:    placed,
			wantDone:  true,
			wantTerms: []string{placedOn},
			wantAnn:   "h0,h1",
		},
		{
			name: "the owner's terms are kept; an earlier placement is replaced",
			job: withTerms(job(true, nil), map[string]string{annotationPlacedNodes: "h7"},
				corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{zoneIn("a"), hostnameIn("h7")}},
				corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{zoneIn("b")}}),
			target:   placed,
			wantDone: true,
			wantTerms: []string{
				"topology.kubernetes.io/zone In a && " + placedOn,
				"topology.kubernetes.io/zone In b && " + placedOn,
			},
			wantAnn: "h0,h1",
		},
		{
			name: "the owner's own hostname expression is not ours: kept",
			job: withTerms(job(true, nil), nil,
				corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{hostnameIn("h0", "h1", "h2")}}),
			target:    placed,
			wantDone:  true,
			wantTerms: []string{"kubernetes.io/hostname In h0,h1,h2 && " + placedOn},
			wantAnn:   "h0,h1",
		},
		{
			name:        "Job not suspended: nothing changed",
			job:         job(false, nil),
			target:      placed,
			wantSuspend: false,
		},
		{
			name:        "kueue: the Job gets the affinity, the Workload is reactivated",
			job:         job(true, map[string]string{labelQueueName: "gpu"}),
			wls:         []runtime.Object{workload("job-train-1", false)},
			target:      executor.Target{Job: key, Labels: map[string]string{labelJobName: "train", labelQueueName: "gpu"}, Placement: placed.Placement},
			wantDone:    true,
			wantSuspend: true, // Kueue unsuspends it once the Workload is admitted
			wantTerms:   []string{placedOn},
			wantAnn:     "h0,h1",
			wantDyn:     []string{listWLs, activateWL},
			wantDetail:  "Job team-a/train placed on h0,h1; Workload team-a/job-train-1 reactivated",
		},
		{
			name:        "kueue: a Workload with no Job is reactivated, and says the placement was not carried",
			wls:         []runtime.Object{workload("job-train-1", false)},
			target:      executor.Target{Namespace: ns, KueueWorkload: "job-train-1", Placement: placed.Placement},
			wantDone:    true,
			wantDyn:     []string{"get workloads ns=" + ns + " job-train-1", activateWL},
			wantDetail:  "not carried",
			wantSuspend: true, // no Job: checked below only when one exists
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var objs []runtime.Object
			if tc.job != nil {
				objs = append(objs, tc.job)
			}
			kube := fake.NewClientset(objs...)
			dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
				map[schema.GroupVersionResource]string{wlGVR: "WorkloadList"}, tc.wls...)
			e, err := New(executor.DefaultKubernetesConfig(), WithClients(kube, dyn))
			if err != nil {
				t.Fatal(err)
			}
			out, err := e.Resume(t.Context(), tc.target)
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if out.Done != tc.wantDone || !strings.Contains(out.Detail, tc.wantDetail) {
				t.Errorf("outcome %+v, want Done %t and detail containing %q", out, tc.wantDone, tc.wantDetail)
			}
			if got := actions(&dyn.Fake); !slices.Equal(got, tc.wantDyn) {
				t.Errorf("dynamic calls:\n got %q\nwant %q", got, tc.wantDyn)
			}
			if tc.job == nil {
				return
			}
			j, err := kube.BatchV1().Jobs(ns).Get(t.Context(), "train", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := j.Spec.Suspend != nil && *j.Spec.Suspend; got != tc.wantSuspend {
				t.Errorf("suspend = %t, want %t", got, tc.wantSuspend)
			}
			want := tc.wantTerms
			if want == nil {
				want = terms(tc.job)
			}
			if got := terms(j); !slices.Equal(got, want) {
				t.Errorf("required node affinity:\n got %q\nwant %q", got, want)
			}
			if got := j.Spec.Template.Annotations[annotationPlacedNodes]; got != tc.wantAnn {
				t.Errorf("annotation %s = %q, want %q", annotationPlacedNodes, got, tc.wantAnn)
			}
		})
	}
}

// TestResumeTwiceOnOtherNodes: the second resume replaces the first one's
// expression instead of ANDing two disjoint node lists (which no node meets).
func TestResumeTwiceOnOtherNodes(t *testing.T) {
	kube := fake.NewClientset(job(true, nil))
	e, err := New(executor.DefaultKubernetesConfig(), WithClients(kube, nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Resume(t.Context(), placed); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.BatchV1().Jobs(ns).Patch(t.Context(), "train", "application/merge-patch+json", patchSuspend, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	again := placed
	again.Placement = []executor.NodeGPUs{{Node: "h5", GPUs: []int{0}}}
	if _, err := e.Resume(t.Context(), again); err != nil {
		t.Fatal(err)
	}
	j, err := kube.BatchV1().Jobs(ns).Get(t.Context(), "train", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := terms(j), []string{"kubernetes.io/hostname In h5"}; !slices.Equal(got, want) {
		t.Fatalf("terms %q, want %q", got, want)
	}
}
