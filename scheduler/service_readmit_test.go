package scheduler

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/gpupool/gpupool/scheduler/executor"
	"github.com/gpupool/gpupool/scheduler/executor/kubernetes"
	"github.com/gpupool/gpupool/schemas"
)

const (
	kNS     = "ml"
	kPodUID = "0a0a0a0a-1111-2222-3333-444444444444"
	kJobUID = "0b0b0b0b-5555-6666-7777-888888888888"
	kPodKey = "k8s/" + kNS + "/" + kPodUID
)

var kWLGVR = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta1", Resource: "workloads"}

// kueueCluster is a cluster where Job ml/train (queue gpu) runs one pod,
// admitted by Kueue as Workload ml/job-train.
func kueueCluster() (*fake.Clientset, *dynfake.FakeDynamicClient) {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "train-x1", Namespace: kNS, UID: types.UID(kPodUID),
			Labels:          map[string]string{"batch.kubernetes.io/job-name": "train"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: kJobUID}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: kNS, UID: kJobUID,
		Labels: map[string]string{"kueue.x-k8s.io/queue-name": "gpu"}}}
	wl := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload",
		"metadata": map[string]any{"name": "job-train", "namespace": kNS, "labels": map[string]any{"kueue.x-k8s.io/job-uid": kJobUID}},
		"spec":     map[string]any{"active": true, "queueName": "gpu"},
	}}
	return fake.NewClientset(p, j), dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{kWLGVR: "WorkloadList"}, wl)
}

// kubeExec is a Kubernetes executor on kube and dyn whose namespace ml is team
// team-a's, in pool train (kubeExecFor: another mapping).
func kubeExec(t *testing.T, kube *fake.Clientset, dyn dynamic.Interface) *kubernetes.Executor {
	t.Helper()
	return kubeExecFor(t, kube, dyn, map[string]executor.NamespaceOwner{kNS: {Team: "team-a", Pool: "train"}})
}

func kubeExecFor(t *testing.T, kube *fake.Clientset, dyn dynamic.Interface, ns map[string]executor.NamespaceOwner) *kubernetes.Executor {
	t.Helper()
	cfg := executor.DefaultKubernetesConfig()
	cfg.Namespaces = ns
	e, err := kubernetes.New(cfg, kubernetes.WithClients(kube, dyn))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func workloadActive(t *testing.T, dyn dynamic.Interface) bool {
	t.Helper()
	wl, err := dyn.Resource(kWLGVR).Namespace(kNS).Get(t.Context(), "job-train", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	active, _, _ := unstructured.NestedBool(wl.Object, "spec", "active")
	return active
}

// TestExternalJobReadmitted: a Kueue Workload a policy reclaimed (spec.active
// set false) is queued in its team's queue, reactivated by the scheduler when
// that queue has room — audited as a resume row with actor scheduler — and,
// once it finishes in Kubernetes, gives its GPUs back.
func TestExternalJobReadmitted(t *testing.T) {
	cfg := testConfig()
	cfg.Policies = append(cfg.Policies, Policy{Name: "train-idle", Finding: schemas.KindIdle, Pools: []string{"train"},
		Steps: []Step{{Action: ActionReclaim, After: 30 * time.Minute}}})
	kube, dyn := kueueCluster()
	h := newHarness(t, cfg, WithExecutor(schemas.SourceKubernetes, kubeExec(t, kube, dyn)))
	a1 := h.submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 4, Card: "H100-80GB", Workload: schemas.WorkloadTraining})
	b1 := h.submit(JobSpec{Team: "team-b", Queue: "b", GPUs: 4, Card: "H100-80GB", Workload: schemas.WorkloadTraining})
	h.pass()
	f := idleFinding(kPodKey, "train")
	f.Team, f.Card, f.Cluster, f.GPUUUIDs = "team-a", "H100-80GB", "c1", []string{"GPU-1", "GPU-2"}
	f.Labels = map[string]string{"batch.kubernetes.io/job-name": "train"}
	h.addFindings(f)
	h.clock.advance(31 * time.Minute)
	h.pass()

	rec := h.rows(DecReclaim)
	if len(rec) != 1 || rec[0].Outcome != OutcomeOK || rec[0].Executor != "kubernetes" || !strings.Contains(rec[0].Reason, "deactivated") {
		t.Fatalf("reclaim rows %+v", rec)
	}
	id := rec[0].Details["readmit"]
	if !strings.HasPrefix(id, "sched/team-a/") || workloadActive(t, dyn) {
		t.Fatalf("readmitted as %q (reason %q), workload active %t: want a job of team-a and the workload inactive", id, rec[0].Reason, workloadActive(t, dyn))
	}
	ext := h.job(id)
	if ext.External == nil || ext.External.Job != kPodKey || ext.Spec.Queue != "a" || ext.Spec.GPUs != 2 || ext.Spec.Cluster != "c1" {
		t.Fatalf("readmitted job %+v", ext)
	}
	wantState(t, ext, StateQueued, 1) // the cluster's H100s are all taken
	h.clock.advance(time.Minute)
	h.pass()
	if workloadActive(t, dyn) || len(h.rows(DecResume)) != 0 {
		t.Fatal("reactivated while its queue had no room")
	}

	if _, err := h.svc.Finish(t.Context(), b1.ID, schemas.StatusSucceeded); err != nil {
		t.Fatal(err)
	}
	h.clock.advance(time.Minute)
	h.pass()
	wantState(t, h.job(id), StateAdmitted, 1)
	res := h.rows(DecResume)
	if len(res) != 1 || res[0].Outcome != OutcomeOK || res[0].Actor != ActorScheduler || res[0].Executor != "kubernetes" ||
		res[0].Details["external"] != kPodKey || !strings.Contains(res[0].Reason, "reactivated") {
		t.Fatalf("resume rows %+v", res)
	}
	if !workloadActive(t, dyn) {
		t.Fatal("workload not reactivated")
	}
	if evs := h.events(id); len(evs) != 0 {
		t.Errorf("job events %v for the external job: its own system reports it", evs)
	}

	// Still there: kept. Then Kueue marks it finished: gone, and its GPUs free.
	h.clock.advance(time.Minute)
	h.pass()
	wantState(t, h.job(id), StateAdmitted, 1)
	wl, _ := dyn.Resource(kWLGVR).Namespace(kNS).Get(t.Context(), "job-train", metav1.GetOptions{})
	_ = unstructured.SetNestedSlice(wl.Object, []any{map[string]any{"type": "Finished", "status": "True"}}, "status", "conditions")
	if _, err := dyn.Resource(kWLGVR).Namespace(kNS).Update(t.Context(), wl, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.clock.advance(time.Minute)
	h.pass()
	if j := h.job(id); j.State != StateFinished {
		t.Fatalf("external job %s after its workload finished: %s", id, j.State)
	}
	fin := h.rows(DecFinish)
	if len(fin) != 1 || fin[0].Actor != ActorScheduler || !strings.Contains(fin[0].Reason, "finished") {
		t.Fatalf("finish rows %+v", fin)
	}
	for _, q := range h.svc.Queues() {
		if q.Name == "a" && q.Running != 1 {
			t.Fatalf("queue a runs %d jobs after the external job ended, want a1 alone", q.Running)
		}
	}
	wantState(t, h.job(a1.ID), StateAdmitted, 1)
}

// TestExternalDevJobHeld: reclaimed external dev work waits for its owner, as
// the scheduler's own dev jobs do; with no queue for its team it is left
// suspended, and the reclaim row says so.
func TestExternalDevJobHeld(t *testing.T) {
	kube, dyn := kueueCluster()
	h := newHarness(t, testConfig(), WithExecutor(schemas.SourceKubernetes,
		kubeExecFor(t, kube, dyn, map[string]executor.NamespaceOwner{kNS: {Team: "x", Pool: "dev"}})))
	f := idleFinding(kPodKey, "dev")
	f.Card, f.GPUUUIDs = "L40S-48GB", []string{"GPU-1"}
	h.addFindings(f)
	h.clock.advance(50 * time.Minute) // notify at 30 min, reclaim 15 min later
	h.pass()
	h.clock.advance(20 * time.Minute)
	h.pass()
	rec := h.rows(DecReclaim)
	if len(rec) != 1 || rec[0].Outcome != OutcomeOK {
		t.Fatalf("reclaim rows %+v", rec)
	}
	id := rec[0].Details["readmit"]
	j := h.job(id)
	if !j.Held || j.State != StateQueued {
		t.Fatalf("external dev job %+v: want held in its queue", j)
	}
	h.pass()
	if workloadActive(t, dyn) {
		t.Fatal("held dev workload reactivated before its owner resumed it")
	}
	if _, err := h.svc.Resume(ContextWithActor(t.Context(), "token:x"), id); err != nil {
		t.Fatal(err)
	}
	h.pass()
	if !workloadActive(t, dyn) {
		t.Fatal("dev workload not reactivated after its owner resumed it")
	}

	// A team with no queue in the pool: nothing to queue it in.
	kube2, dyn2 := kueueCluster()
	xTrain := map[string]executor.NamespaceOwner{kNS: {Team: "x", Pool: "train"}}
	h2 := newHarness(t, testConfig(), WithExecutor(schemas.SourceKubernetes, kubeExecFor(t, kube2, dyn2, xTrain)))
	g := idleFinding(kPodKey, "train") // team x has no queue in pool train
	g.GPUUUIDs = []string{"GPU-1"}
	cfg := testConfig()
	cfg.Policies = []Policy{{Name: "train-idle", Finding: schemas.KindIdle, Pools: []string{"train"}, Steps: []Step{{Action: ActionReclaim}}}}
	h2.start(cfg, WithExecutor(schemas.SourceKubernetes, kubeExecFor(t, kube2, dyn2, xTrain)))
	h2.addFindings(g)
	h2.pass()
	rec = h2.rows(DecReclaim)
	if len(rec) != 1 || rec[0].Details["readmit"] != "none" || !strings.Contains(rec[0].Reason, "no queue of team x in pool train") {
		t.Fatalf("reclaim rows %+v", rec)
	}
}

// TestRestartRechecksRunningJobs: after a restart each running job mapped to a
// Kubernetes Job is checked: the one deleted while the scheduler was down is
// finished, with the executor's account, and its GPUs go back; the one still
// there keeps running.
func TestRestartRechecksRunningJobs(t *testing.T) {
	state := filepath.Join(t.TempDir(), "jobs.json")
	kube := fake.NewClientset(
		&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "train-1", Namespace: kNS}},
		&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "train-2", Namespace: "ml-b"}})
	owners := map[string]executor.NamespaceOwner{kNS: {Team: "team-a", Pool: "train"}, "ml-b": {Team: "team-b", Pool: "train"}}
	h := newHarness(t, testConfig(), WithStateFile(state), WithExecutor(schemas.SourceKubernetes, kubeExecFor(t, kube, nil, owners)))
	lab := func(ns, name string) map[string]string {
		return map[string]string{"gpupool.io/k8s-namespace": ns, "gpupool.io/k8s-job": name}
	}
	j1 := h.submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 4, Card: "H100-80GB", Labels: lab(kNS, "train-1")})
	j2 := h.submit(JobSpec{Team: "team-b", Queue: "b", GPUs: 4, Card: "H100-80GB", Labels: lab("ml-b", "train-2")})
	j3 := h.submit(JobSpec{Team: "team-b", Queue: "b", GPUs: 2, Card: "H100-80GB"})
	h.pass()
	wantState(t, h.job(j3.ID), StateQueued, 1)

	// While the scheduler is down, train-2 is deleted.
	if err := kube.BatchV1().Jobs("ml-b").Delete(t.Context(), "train-2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.start(testConfig(), WithStateFile(state), WithExecutor(schemas.SourceKubernetes, kubeExecFor(t, kube, nil, owners)))
	wantState(t, h.job(j1.ID), StateAdmitted, 1)
	if j := h.job(j2.ID); j.State != StateFinished {
		t.Fatalf("job %s of the deleted Job: %s, want finished", j2.ID, j.State)
	}
	fin := h.rows(DecFinish)
	if len(fin) != 1 || fin[0].Job != j2.ID || fin[0].Actor != ActorScheduler ||
		!strings.Contains(fin[0].Reason, "ended while the scheduler was down") || !strings.Contains(fin[0].Reason, "train-2") {
		t.Fatalf("finish rows %+v", fin)
	}
	h.pass()
	wantState(t, h.job(j3.ID), StateAdmitted, 1) // the GPUs train-2 held
}

// TestSlurmReadmitOnlyWhenHeld: a Slurm job requeued with a hold is queued
// again and released (Resume) when its queue has room; a plain requeue is
// Slurm's to run again, and the scheduler leaves it alone.
func TestSlurmReadmitOnlyWhenHeld(t *testing.T) {
	for _, hold := range []bool{true, false} {
		t.Run(map[bool]string{true: "requeuehold", false: "requeue"}[hold], func(t *testing.T) {
			cfg := testConfig()
			cfg.Slurm.RequeueHold = hold
			cfg.Policies = []Policy{{Name: "train-idle", Finding: schemas.KindIdle, Pools: []string{"train"}, Steps: []Step{{Action: ActionReclaim}}}}
			sexec := &fakeExec{owner: ownedBy("team-b", "train")}
			h := newHarness(t, cfg, WithExecutor(schemas.SourceSlurm, checkedExec{sexec}))
			f := idleFinding("slurm/c1/42", "train")
			f.Team, f.Card, f.GPUUUIDs = "team-b", "H100-80GB", []string{"GPU-1", "GPU-2", "GPU-3"}
			h.addFindings(f)
			h.pass()
			h.pass()
			rec := h.rows(DecReclaim)
			if len(rec) != 1 || len(sexec.stops) != 1 || !sexec.requeues[0] {
				t.Fatalf("reclaim rows %+v, stops %+v", rec, sexec.stops)
			}
			id := rec[0].Details["readmit"]
			if !hold {
				if id != "" || len(h.svc.Jobs(JobFilter{})) != 0 || len(sexec.resumes) != 0 {
					t.Fatalf("plain requeue readmitted as %q: jobs %+v, resumes %+v", id, h.svc.Jobs(JobFilter{}), sexec.resumes)
				}
				return
			}
			wantState(t, h.job(id), StateAdmitted, 1)
			if len(sexec.resumes) != 1 || sexec.resumes[0].Job != "slurm/c1/42" {
				t.Fatalf("resumes %+v, want a release of slurm/c1/42", sexec.resumes)
			}
		})
	}
}

// checkedExec is a fakeExec that can say its jobs are still there.
type checkedExec struct{ *fakeExec }

var _ executor.Checker = checkedExec{}

func (checkedExec) Check(context.Context, executor.Target) (executor.Presence, error) {
	return executor.Presence{Detail: "still there"}, nil
}

// TestNoReadmitWithoutChecker: an executor that cannot say when a job ends (the
// sim executor, whose fleet resubmits its jobs itself) gets nothing readmitted:
// its GPUs would count as held for ever.
func TestNoReadmitWithoutChecker(t *testing.T) {
	cfg := testConfig()
	cfg.Policies = []Policy{{Name: "train-idle", Finding: schemas.KindIdle, Pools: []string{"train"}, Steps: []Step{{Action: ActionReclaim}}}}
	h := newHarness(t, cfg) // fakeExec for every source: no Check
	h.exec.owner = ownedBy("team-a", "train")
	f := idleFinding(kPodKey, "train")
	f.Team, f.Card, f.GPUUUIDs = "team-a", "H100-80GB", []string{"GPU-1"}
	h.addFindings(f)
	h.pass()
	if rec := h.rows(DecReclaim); len(rec) != 1 || rec[0].Outcome != OutcomeOK || rec[0].Details["readmit"] != "" {
		t.Fatalf("reclaim rows %+v", rec)
	}
	if jobs := h.svc.Jobs(JobFilter{}); len(jobs) != 0 {
		t.Fatalf("jobs %+v, want none readmitted", jobs)
	}
}

// TestReadmittedJobReclaimedAgain: a readmitted Kubernetes Job found idle again
// — in a new pod, with a new job key — is reclaimed as the job that stands for
// it (suspended again, requeued as its next attempt), not queued a second time.
func TestReadmittedJobReclaimedAgain(t *testing.T) {
	cfg := testConfig()
	cfg.Policies = []Policy{{Name: "train-idle", Finding: schemas.KindIdle, Pools: []string{"train"}, Steps: []Step{{Action: ActionReclaim}}}}
	kube, dyn := kueueCluster()
	h := newHarness(t, cfg, WithExecutor(schemas.SourceKubernetes, kubeExec(t, kube, dyn)))
	f := idleFinding(kPodKey, "train")
	f.Team, f.Card, f.Cluster, f.GPUUUIDs = "team-a", "H100-80GB", "c1", []string{"GPU-1", "GPU-2"}
	f.Labels = map[string]string{"batch.kubernetes.io/job-name": "train"}
	h.addFindings(f)
	h.pass()
	id := h.rows(DecReclaim)[0].Details["readmit"]
	h.clock.advance(time.Minute)
	h.pass()
	wantState(t, h.job(id), StateAdmitted, 1)
	if !workloadActive(t, dyn) {
		t.Fatal("workload not reactivated")
	}
	f.State = schemas.StateResolved
	h.addFindings(f)

	// Kubernetes runs the Job's pod anew; it idles too.
	g := f
	g.ID, g.Job, g.State = "idle-again", "k8s/"+kNS+"/0c0c0c0c-9999-9999-9999-999999999999", ""
	h.addFindings(g)
	h.clock.advance(time.Minute)
	h.pass()
	rec := h.rows(DecReclaim)
	if len(rec) != 2 || rec[1].Job != id || rec[1].Outcome != OutcomeOK || rec[1].Details["readmit"] != "" {
		t.Fatalf("reclaim rows %+v: want the second on %s itself", rec, id)
	}
	// Requeued, and readmitted in the same pass: its queue has room (training
	// is not held; a dev job would be).
	wantState(t, h.job(id), StateAdmitted, 2)
	if n := len(h.svc.Jobs(JobFilter{})); n != 1 {
		t.Fatalf("%d jobs, want the one readmitted job", n)
	}
	var patches []string
	for _, a := range dyn.Actions() {
		if a.GetVerb() == "patch" {
			patches = append(patches, string(a.(k8stesting.PatchAction).GetPatch()))
		}
	}
	off, on := `{"spec":{"active":false}}`, `{"spec":{"active":true}}`
	if want := []string{off, on, off, on}; !slices.Equal(patches, want) {
		t.Fatalf("workload patches %q, want %q", patches, want)
	}
	if res := h.rows(DecResume); len(res) != 2 || res[1].Job != id+"/2" {
		t.Fatalf("resume rows %+v", res)
	}
}
