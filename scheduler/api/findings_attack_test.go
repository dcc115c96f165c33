package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/scheduler/executor"
	"github.com/gpupool/gpupool/scheduler/executor/kubernetes"
	"github.com/gpupool/gpupool/scheduler/executor/slurm"
	"github.com/gpupool/gpupool/schemas"
)

// The attacks of issue 37 on findings and labels, each through the API with the
// real tokens of newGuard and the real scheduler behind it: the analyzer's
// credential may say what it saw, never whose a job is, nor since when the
// scheduler knows; a team's credential may not make the scheduler act on
// another team's external job by naming it in its labels.

const (
	prodNS  = "serving"
	prodPod = "0d0d0d0d-1111-2222-3333-444444444444"
	prodJob = "11111111-aaaa-bbbb-cccc-dddddddddddd"
)

// clock is the scheduler's clock in these tests.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// recordingExec is a process and default executor that records what it is
// asked to do, and can say whose nothing is.
type recordingExec struct {
	mu    sync.Mutex
	calls []string
}

func (e *recordingExec) Name() string { return "recording" }
func (e *recordingExec) note(s string) {
	e.mu.Lock()
	e.calls = append(e.calls, s)
	e.mu.Unlock()
}
func (e *recordingExec) Calls() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.calls)
}
func (e *recordingExec) Stop(_ context.Context, t executor.Target, _ bool, _ time.Duration) (executor.Outcome, error) {
	e.note("stop " + t.Job)
	return executor.Outcome{Done: true}, nil
}
func (e *recordingExec) Resume(_ context.Context, t executor.Target) (executor.Outcome, error) {
	e.note("resume " + t.Job)
	return executor.Outcome{Done: true}, nil
}
func (e *recordingExec) Kill(_ context.Context, t executor.Target, _ time.Duration) (executor.Outcome, error) {
	e.note(fmt.Sprintf("kill %d on %s", t.PID, t.Node))
	return executor.Outcome{Done: true}, nil
}

// prodCluster is a Kubernetes cluster whose namespace serving runs Job
// serving/llm (one pod, not suspended); the namespace is team serving's, in
// queue online of the protected, non-preemptible pool inference-online.
func prodCluster(t *testing.T) (*fake.Clientset, *kubernetes.Executor) {
	t.Helper()
	suspend := false
	kube := fake.NewClientset(
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "llm-x", Namespace: prodNS, UID: types.UID(prodPod),
			Labels:          map[string]string{"batch.kubernetes.io/job-name": "llm"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "llm", UID: prodJob}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}},
		&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "llm", Namespace: prodNS, UID: prodJob}, Spec: batchv1.JobSpec{Suspend: &suspend}},
	)
	cfg := executor.DefaultKubernetesConfig()
	cfg.Mode = executor.KubernetesModeSuspendJob
	cfg.Namespaces = map[string]executor.NamespaceOwner{
		prodNS:       {Team: "serving", Queue: "inference-online"},
		"nlp-ns":     {Team: "nlp", Pool: scheduler.PoolDev},
		"vision-ns":  {Team: "vision", Pool: scheduler.PoolDev},
		"unknown-ns": {Team: "nobody-real", Pool: scheduler.PoolDev},
	}
	ex, err := kubernetes.New(cfg, kubernetes.WithClients(kube, nil))
	if err != nil {
		t.Fatal(err)
	}
	return kube, ex
}

// writes are the API calls of kube that change something.
func writes(kube *fake.Clientset) []string {
	var out []string
	for _, a := range kube.Actions() {
		if v := a.GetVerb(); v != "get" && v != "list" && v != "watch" {
			out = append(out, v+" "+a.GetResource().Resource+" "+a.GetNamespace())
		}
	}
	return out
}

// attackServer is the scheduler configured by edit, its API behind the test
// tokens, on a clock the test moves.
func attackServer(t *testing.T, edit func(*scheduler.Config), opts ...scheduler.Option) (*scheduler.Service, *httptest.Server, *clock) {
	t.Helper()
	c := &clock{t: t0}
	cfg := scheduler.DefaultConfig()
	cfg.Policies = []scheduler.Policy{
		{Name: "dev-idle", Finding: schemas.KindIdle, Pools: []string{scheduler.PoolDev},
			Steps: []scheduler.Step{{Action: scheduler.ActionNotify, After: 30 * time.Minute}, {Action: scheduler.ActionReclaim, After: 15 * time.Minute}}},
		{Name: "zombie-kill", Finding: schemas.KindZombie, Steps: []scheduler.Step{{Action: scheduler.ActionKill, After: 10 * time.Minute}}},
	}
	if edit != nil {
		edit(&cfg)
	}
	all := append([]scheduler.Option{scheduler.WithClock(c.now), scheduler.WithJobIDPrefix(""),
		scheduler.WithSleep(func(context.Context, time.Duration) error { return nil })}, opts...)
	svc, err := scheduler.New(cfg, all...)
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(NewHandler(svc, newGuard(t)))
	t.Cleanup(srv.Close)
	return svc, srv, c
}

func pushFindings(t *testing.T, srv *httptest.Server, caller string, fs ...schemas.Finding) (int, string) {
	t.Helper()
	data, err := json.Marshal(FindingsRequest{Findings: fs})
	if err != nil {
		t.Fatal(err)
	}
	status, code, _ := call(t, srv, caller, request{method: "POST", path: "/v1/findings", body: string(data)})
	return status, code
}

func pass(t *testing.T, svc *scheduler.Service) {
	t.Helper()
	if err := svc.Pass(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func rowsOf(t *testing.T, svc *scheduler.Service, decision string) []scheduler.Action {
	t.Helper()
	rows, err := svc.Actions(t.Context(), scheduler.ActionFilter{Decision: decision})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestAttackFindingClaimsDevPool: the analyzer's credential pushes an idle
// finding for the pod of a protected, non-preemptible production Job, saying
// pool dev and team nlp, and a week-old since. The scheduler resolves the pod's
// namespace through Kubernetes — team serving, queue online, pool
// inference-online — so the dev policy never applies: nothing is suspended or
// deleted, however long it waits, and no row names pool dev.
func TestAttackFindingClaimsDevPool(t *testing.T) {
	kube, kex := prodCluster(t)
	procs := &recordingExec{}
	svc, srv, c := attackServer(t, nil, scheduler.WithExecutor(schemas.SourceKubernetes, kex), scheduler.WithExecutor(schemas.SourceProcess, procs))
	week := t0.Add(-7 * 24 * time.Hour)
	f := schemas.Finding{ID: "forged-prod", Episode: 1, Kind: schemas.KindIdle, Severity: schemas.SeverityCritical,
		Job: "k8s/" + prodNS + "/" + prodPod, Team: "nlp", Pool: scheduler.PoolDev, Cluster: "a", GPUUUIDs: []string{"GPU-1"},
		Since: week, FirstSeen: week, LastSeen: t0}
	// A zombie-kill policy has no pool filter: the same pod's process, said to
	// be a zombie in dev, is in a protected pool all the same.
	z := schemas.Finding{ID: "forged-zombie", Episode: 1, Kind: schemas.KindZombie, Job: f.Job, Team: "nlp", Pool: scheduler.PoolDev,
		Node: "gpu-a-001", PID: 4242, Since: week, FirstSeen: week, LastSeen: t0}
	if status, code := pushFindings(t, srv, "analyzer", f, z); status != 202 {
		t.Fatalf("push: %d %s", status, code)
	}
	for range 12 {
		pass(t, svc)
		c.advance(10 * time.Minute)
	}
	if w := writes(kube); len(w) != 0 {
		t.Fatalf("the production Job was changed on a forged finding: %v", w)
	}
	if calls := procs.Calls(); len(calls) != 0 {
		t.Fatalf("the production process was acted on: %v", calls)
	}
	all, _ := svc.Actions(t.Context(), scheduler.ActionFilter{})
	for _, a := range all {
		switch {
		case a.Policy == "" || a.FindingID == z.ID && a.Decision == scheduler.DecSkip && a.Details["class"] == "protected":
		default:
			t.Errorf("a policy acted on the production job: %+v", a)
		}
		if a.Policy != "" && (a.Pool != scheduler.PoolInferenceOnline || a.Team != "serving") {
			t.Errorf("row takes the finding's claimed owner: %+v", a)
		}
	}
}

// TestAttackFindingOldSince: a finding about a dev job that says the job has
// been idle for a week gets the policy's whole grace all the same, counted from
// when the scheduler first saw it: no notice before 30 minutes, no reclaim
// before 45.
func TestAttackFindingOldSince(t *testing.T) {
	ex := &recordingExec{}
	svc, srv, c := attackServer(t, nil, scheduler.WithExecutor("", ex), scheduler.WithExecutor(schemas.SourceScheduler, ex))
	j, err := svc.Submit(scheduler.ContextWithActor(t.Context(), "token:setup"), scheduler.JobSpec{Team: "nlp", Queue: scheduler.PoolDev, GPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	pass(t, svc)
	week := t0.Add(-7 * 24 * time.Hour)
	f := schemas.Finding{ID: "old-since", Episode: 1, Kind: schemas.KindIdle, Severity: schemas.SeverityWarning, Job: j.ID,
		Team: "nlp", Pool: scheduler.PoolDev, Since: week, FirstSeen: week, LastSeen: t0}
	if status, code := pushFindings(t, srv, "analyzer", f); status != 202 {
		t.Fatalf("push: %d %s", status, code)
	}
	steps := func() []string {
		var out []string
		for _, a := range rowsOf(t, svc, "") {
			if a.Policy != "" {
				out = append(out, a.Decision+"@"+a.Time.Sub(t0).String())
			}
		}
		return out
	}
	for range 44 {
		pass(t, svc)
		c.advance(time.Minute)
	}
	pass(t, svc) // t0 + 44m
	if got := steps(); !slices.Equal(got, []string{"notify@30m0s"}) || len(ex.Calls()) != 0 {
		t.Fatalf("policy steps by 44 min: %v, executor calls %v; want only the notice, at 30 min", got, ex.Calls())
	}
	c.advance(time.Minute)
	pass(t, svc)
	if got := steps(); !slices.Equal(got, []string{"notify@30m0s", "reclaim@45m0s"}) {
		t.Fatalf("policy steps by 45 min: %v, want the reclaim at 45 min", got)
	}
}

// TestAttackFindingUnknownJob: findings naming a job no one can resolve — a pod
// that does not exist, a Slurm-like key no executor knows, a process no job
// owns on an executor that cannot say whose it is — are recorded and skipped:
// no executor is asked to stop or kill anything.
func TestAttackFindingUnknownJob(t *testing.T) {
	kube, kex := prodCluster(t)
	ex := &recordingExec{}
	svc, srv, c := attackServer(t, func(cfg *scheduler.Config) {
		cfg.Policies[0].Steps = []scheduler.Step{{Action: scheduler.ActionReclaim}}
	}, scheduler.WithExecutor(schemas.SourceKubernetes, kex), scheduler.WithExecutor("", ex))
	since := t0.Add(-time.Hour)
	fs := []schemas.Finding{
		{ID: "ghost-pod", Episode: 1, Kind: schemas.KindIdle, Job: "k8s/nlp-ns/00000000-0000-0000-0000-000000000000",
			Team: "nlp", Pool: scheduler.PoolDev, Since: since, FirstSeen: since},
		{ID: "other-ns", Episode: 1, Kind: schemas.KindIdle, Job: "k8s/kube-system/" + prodPod, Team: "nlp", Pool: scheduler.PoolDev,
			Labels: map[string]string{"batch.kubernetes.io/job-name": "llm"}, Since: since, FirstSeen: since},
		{ID: "ghost-slurm", Episode: 1, Kind: schemas.KindIdle, Job: "slurm/c9/77", Team: "nlp", Pool: scheduler.PoolDev, Since: since, FirstSeen: since},
		{ID: "ghost-sched", Episode: 1, Kind: schemas.KindIdle, Job: "sched/nlp/999", Team: "nlp", Pool: scheduler.PoolDev, Since: since, FirstSeen: since},
		{ID: "stray", Episode: 1, Kind: schemas.KindZombie, Node: "gpu-a-001", PID: 4242, Team: "nlp", Pool: scheduler.PoolDev, Since: since, FirstSeen: since},
	}
	if status, code := pushFindings(t, srv, "analyzer", fs...); status != 202 {
		t.Fatalf("push: %d %s", status, code)
	}
	for range 4 {
		pass(t, svc)
		c.advance(10 * time.Minute)
	}
	if calls := ex.Calls(); len(calls) != 0 {
		t.Fatalf("executor acted on unresolved findings: %v", calls)
	}
	if w := writes(kube); len(w) != 0 {
		t.Fatalf("Kubernetes changed on unresolved findings: %v", w)
	}
	skipped := map[string]string{}
	for _, a := range rowsOf(t, svc, scheduler.DecSkip) {
		if a.Details["class"] == "unresolved" {
			skipped[a.FindingID] = a.Reason
		}
		if a.Pool == scheduler.PoolDev || a.Team == "nlp" {
			t.Errorf("a skip row takes the finding's claimed owner for the resolved one: %+v", a)
		}
	}
	for _, f := range fs {
		if !strings.Contains(skipped[f.ID], "could not be resolved") {
			t.Errorf("finding %s: no unresolved skip recorded (skips: %v)", f.ID, skipped)
		}
	}
}

// TestAttackFindingsFlood: one identity pushing finding after finding holds at
// most max_pushed_findings of them: a push past it is refused whole with 429
// too_many_findings and counted; pushing the same IDs again (the analyzer's
// updates) replaces them instead of piling up; another identity has its own
// allowance; and an oversized finding is refused.
func TestAttackFindingsFlood(t *testing.T) {
	const limit = 50
	svc, srv, _ := attackServer(t, func(cfg *scheduler.Config) { cfg.MaxPushedFindings = limit })
	batch := func(from, n int) []schemas.Finding {
		fs := make([]schemas.Finding, n)
		for i := range fs {
			fs[i] = schemas.Finding{ID: fmt.Sprintf("flood-%d", from+i), Episode: 1, Kind: schemas.KindLowUtil, Job: "sched/nlp/1",
				FirstSeen: t0, Evidence: map[string]float64{"window_minutes": 30}}
		}
		return fs
	}
	if status, code := pushFindings(t, srv, "analyzer", batch(0, limit)...); status != 202 {
		t.Fatalf("first %d: %d %s", limit, status, code)
	}
	for round := range 20 {
		// The same findings again (updates): accepted, held once.
		if status, code := pushFindings(t, srv, "analyzer", batch(0, limit)...); status != 202 {
			t.Fatalf("round %d, updates: %d %s", round, status, code)
		}
		// New ones past the cap: refused, none kept.
		if status, code := pushFindings(t, srv, "analyzer", batch(limit+round*100, 100)...); status != 429 || code != "too_many_findings" {
			t.Fatalf("round %d, 100 more: %d %q, want 429 too_many_findings", round, status, code)
		}
		if all, mine := svc.PushedFindings("token:analyzer"); all != limit || mine != limit {
			t.Fatalf("round %d: %d findings held, %d of them the analyzer's; want %d", round, all, mine, limit)
		}
	}
	// Withdrawing some makes room again.
	withdrawn := batch(0, 10)
	for i := range withdrawn {
		withdrawn[i].State = schemas.StateResolved
	}
	if status, code := pushFindings(t, srv, "analyzer", withdrawn...); status != 202 {
		t.Fatalf("withdraw: %d %s", status, code)
	}
	if status, code := pushFindings(t, srv, "analyzer", batch(1000, 10)...); status != 202 {
		t.Fatalf("10 new after 10 withdrawn: %d %s", status, code)
	}
	// Another identity is not blocked by the analyzer's flood.
	if status, code := pushFindings(t, srv, "admin", batch(5000, 5)...); status != 202 {
		t.Fatalf("admin's push: %d %s", status, code)
	}
	if all, mine := svc.PushedFindings("token:analyzer"); all != limit+5 || mine != limit {
		t.Fatalf("%d held, %d the analyzer's; want %d and %d", all, mine, limit+5, limit)
	}
	// One finding as big as a push may be: refused.
	big := batch(9000, 1)
	big[0].Labels = map[string]string{}
	for i := range 5000 {
		big[0].Labels[fmt.Sprintf("label-%d", i)] = strings.Repeat("x", 40)
	}
	if status, code := pushFindings(t, srv, "admin", big...); status != 400 {
		t.Fatalf("an oversized finding: %d %s, want 400", status, code)
	}
}

// TestAttackLabelsNameOtherTeamsKubernetesJob: team nlp submits a job whose
// labels name team serving's Kubernetes Job, then one naming team vision's
// namespace: each is refused with 403 not_owner and the reason, recorded as a
// reject row, and nothing in the cluster is changed. A job naming its own
// team's namespace is accepted.
func TestAttackLabelsNameOtherTeamsKubernetesJob(t *testing.T) {
	kube, kex := prodCluster(t)
	svc, srv, _ := attackServer(t, nil, scheduler.WithExecutor(schemas.SourceKubernetes, kex))
	submit := func(ns, job string) (int, string, []byte) {
		body := fmt.Sprintf(`{"team":"nlp","queue":"dev","gpus":1,"labels":{"gpupool.io/k8s-namespace":%q,"gpupool.io/k8s-job":%q}}`, ns, job)
		return call(t, srv, "nlp", request{method: "POST", path: "/v1/jobs", body: body})
	}
	for _, tc := range []struct{ ns, job, who string }{{prodNS, "llm", "serving"}, {"vision-ns", "train", "vision"}} {
		status, code, body := submit(tc.ns, tc.job)
		if status != 403 || code != "not_owner" || !strings.Contains(string(body), "team "+tc.who+"'s") {
			t.Fatalf("submit naming %s/%s: %d %s %s, want 403 not_owner naming team %s", tc.ns, tc.job, status, code, body, tc.who)
		}
	}
	if jobs := svc.Jobs(scheduler.JobFilter{}); len(jobs) != 0 {
		t.Fatalf("jobs queued: %+v", jobs)
	}
	rej := rowsOf(t, svc, scheduler.DecReject)
	if len(rej) != 2 || !strings.Contains(rej[0].Reason, "not the team's") || rej[0].Actor != "token:nlp" {
		t.Fatalf("reject rows %+v", rej)
	}
	if status, code, body := submit("nlp-ns", "mine"); status != 201 {
		t.Fatalf("submit naming its own namespace: %d %s %s", status, code, body)
	}
	pass(t, svc)
	if w := writes(kube); len(w) != 0 {
		t.Fatalf("the cluster was changed: %v", w)
	}
}

// slurmStandIn puts a scontrol and scancel on PATH: scontrol show job answers
// for job 42 with account vision and user vic; every call is logged. It returns
// the log reader.
func slurmStandIn(t *testing.T) func() []string {
	t.Helper()
	dir := t.TempDir()
	log := filepath.Join(dir, "calls.log")
	show := "JobId=42 JobName=train UserId=vic(2001) GroupId=vic(2001) Account=vision Priority=4294 JobState=RUNNING Partition=gpu Reason=None"
	script := func(name string) string {
		return fmt.Sprintf("#!/bin/sh\necho %s \"$@\" >> '%s'\ncase \"$*\" in\n'--oneliner show job 42') echo '%s';;\n'--oneliner show job '*) echo 'slurm_load_jobs error: Invalid job id specified' >&2; exit 1;;\nesac\nexit 0\n",
			name, log, show)
	}
	for _, name := range []string{"scontrol", "scancel"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script(name)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return func() []string {
		data, err := os.ReadFile(log)
		if err != nil {
			return nil
		}
		return strings.Split(strings.TrimSpace(string(data)), "\n")
	}
}

// TestAttackLabelsNameOtherTeamsSlurmJob: team nlp names Slurm job 42 — team
// vision's by its account — in its job's labels. The submit is refused (403).
// A job that named an ID Slurm did not have yet, and that vision's job got
// later, is refused at its reclaim by the policy pass: an audited skip of class
// ownership, and neither scontrol requeue nor scancel is ever run.
func TestAttackLabelsNameOtherTeamsSlurmJob(t *testing.T) {
	calls := slurmStandIn(t)
	scfg := executor.DefaultSlurmConfig()
	scfg.Accounts = map[string]string{"vision": "vision", "nlp": "nlp"}
	sex, err := slurm.New(scfg)
	if err != nil {
		t.Fatal(err)
	}
	ex := &recordingExec{}
	svc, srv, c := attackServer(t, func(cfg *scheduler.Config) {
		cfg.Policies[0].Steps = []scheduler.Step{{Action: scheduler.ActionReclaim}}
	}, scheduler.WithExecutor(schemas.SourceSlurm, sex), scheduler.WithExecutor(schemas.SourceScheduler, ex))
	status, code, body := call(t, srv, "nlp", request{method: "POST", path: "/v1/jobs",
		body: `{"team":"nlp","queue":"dev","gpus":1,"labels":{"gpupool.io/slurm-job-id":"42"}}`})
	if status != 403 || code != "not_owner" || !strings.Contains(string(body), "vision") {
		t.Fatalf("submit naming vision's Slurm job: %d %s %s", status, code, body)
	}
	// Job 43 does not exist yet: accepted, to be confirmed before any action.
	status, _, body = call(t, srv, "nlp", request{method: "POST", path: "/v1/jobs",
		body: `{"team":"nlp","queue":"dev","gpus":1,"labels":{"gpupool.io/slurm-job-id":"43"}}`})
	if status != 201 {
		t.Fatalf("submit naming a Slurm job not there yet: %d %s", status, body)
	}
	var j scheduler.Job
	if err := json.Unmarshal(body, &j); err != nil {
		t.Fatal(err)
	}
	pass(t, svc)
	// Slurm gives ID 43 to vision's next job.
	show43 := "JobId=43 UserId=vic(2001) Account=vision JobState=RUNNING Partition=gpu"
	dir := filepath.Dir(mustLookPath(t, "scontrol"))
	stand := fmt.Sprintf("#!/bin/sh\necho scontrol \"$@\" >> '%s'\ncase \"$*\" in\n'--oneliner show job 43') echo '%s';;\nesac\nexit 0\n",
		filepath.Join(dir, "calls.log"), show43)
	if err := os.WriteFile(filepath.Join(dir, "scontrol"), []byte(stand), 0o755); err != nil {
		t.Fatal(err)
	}
	f := schemas.Finding{ID: "idle-43", Episode: 1, Kind: schemas.KindIdle, Job: j.ID, Since: t0, FirstSeen: t0}
	if status, code := pushFindings(t, srv, "analyzer", f); status != 202 {
		t.Fatalf("push: %d %s", status, code)
	}
	for range 3 {
		pass(t, svc)
		c.advance(time.Minute)
	}
	for _, l := range calls() {
		if !strings.HasPrefix(l, "scontrol --oneliner show job") {
			t.Errorf("Slurm was asked to act: %q", l)
		}
	}
	var refused bool
	for _, a := range rowsOf(t, svc, scheduler.DecReclaim) {
		if a.Outcome == scheduler.OutcomeSkipped && a.Details["class"] == "ownership" && strings.Contains(a.Reason, "team vision's") {
			refused = true
		}
	}
	if !refused {
		t.Fatalf("no audited refusal of the reclaim: %+v", rowsOf(t, svc, ""))
	}
}

func mustLookPath(t *testing.T, name string) string {
	t.Helper()
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if p := filepath.Join(d, name); fileExists(p) {
			return p
		}
	}
	t.Fatalf("%s not on PATH", name)
	return ""
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }
