package scheduler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gpupool/gpupool/scheduler/executor"
	"github.com/gpupool/gpupool/schemas"
)

var t0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// fakeClock is the injected clock of scenario tests: time moves only when the
// test says so.
// fakeClock is a clock the test moves; the service reads it from its
// background work too (the outbox's backoff), hence the lock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func ptr[T any](v T) *T { return &v }

// testModel is a small pool: one cluster of 8 L40S (cheap, 48 GiB) and 8 H100
// (dear, 80 GiB); training queues a and b share cohort "train" with 4 H100 each;
// a protected online inference queue lends its 4 L40S to the cohort; dev has 4
// L40S in the cohort.
func testModel() Model {
	return Model{
		Cards: []Card{{Name: "H100-80GB", MemoryGiB: 80, Rank: 4}, {Name: "L40S-48GB", MemoryGiB: 48, Rank: 1}},
		Clusters: []Cluster{
			{Name: "c1", Capacity: map[string]int{"H100-80GB": 8, "L40S-48GB": 8}},
		},
		Pools: []Pool{
			{Name: "train", Capacity: map[string]int{"H100-80GB": 8}, MayLend: true, MayBorrow: true, Preemptible: true, ReclaimGrace: 5 * time.Minute},
			{Name: "infer", Capacity: map[string]int{"L40S-48GB": 4}, MayLend: true, Protected: true},
			{Name: "dev", Capacity: map[string]int{"L40S-48GB": 4}, MayLend: true, MayBorrow: true, Preemptible: true},
		},
		PriorityClasses:      []PriorityClass{{Name: "critical", Value: 1000}, {Name: "normal", Value: 100}, {Name: "low", Value: 10}},
		DefaultPriorityClass: "normal",
		Queues: []Queue{
			{Name: "a", Pool: "train", Team: "team-a", Cohort: "train", Weight: 1, Quota: map[string]Quota{"H100-80GB": {Nominal: 4}}},
			{Name: "b", Pool: "train", Team: "team-b", Cohort: "train", Weight: 1, Quota: map[string]Quota{"H100-80GB": {Nominal: 4}}},
			{Name: "online", Pool: "infer", Cohort: "train", Weight: 1, Quota: map[string]Quota{"L40S-48GB": {Nominal: 4}}},
			{Name: "dev", Pool: "dev", Cohort: "train", Weight: 1, Quota: map[string]Quota{"L40S-48GB": {Nominal: 4, BorrowingLimit: ptr(2)}}},
		},
	}
}

func testConfig() Config {
	c := DefaultConfig()
	c.Model = testModel()
	c.Policies = []Policy{
		{Name: "dev-idle", Finding: schemas.KindIdle, Pools: []string{"dev", "infer"}, MaxActionsPerHour: 10,
			Steps:        []Step{{Action: ActionNotify, After: 30 * time.Minute}, {Action: ActionReclaim, After: 15 * time.Minute}},
			OptOutLabels: map[string]string{"gpupool.io/no-reclaim": "true"}},
		{Name: "zombie-kill", Finding: schemas.KindZombie, MaxActionsPerHour: 2, Steps: []Step{{Action: ActionKill, After: 10 * time.Minute}}},
		{Name: "wrong-card", Finding: schemas.KindWrongCard, Steps: []Step{{Action: ActionRecommend}}},
	}
	return c
}

// fakeExec records the actions it is asked for; failures makes the first calls
// fail; refuse makes every stop and kill fail with executor.ErrUnsupported.
type fakeExec struct {
	mu       sync.Mutex
	stops    []executor.Target
	requeues []bool
	graces   []time.Duration
	kills    []executor.Target
	resumes  []executor.Target
	failures int
	refuse   bool
	calls    int
	// owner answers Owner (executor.Resolver); nil: ErrNotFound, the executor
	// knows no such job.
	owner func(executor.Target) (executor.Owner, error)
}

var _ executor.Resolver = (*fakeExec)(nil)

func (f *fakeExec) Owner(_ context.Context, t executor.Target) (executor.Owner, error) {
	f.mu.Lock()
	owner := f.owner
	f.mu.Unlock()
	if owner == nil {
		return executor.Owner{}, fmt.Errorf("fake: %w", executor.ErrNotFound)
	}
	return owner(t)
}

var _ executor.Executor = (*fakeExec)(nil)

func (f *fakeExec) Name() string { return "fake" }

func (f *fakeExec) fail() error {
	f.calls++
	if f.refuse {
		return fmt.Errorf("fake: %w", executor.ErrUnsupported)
	}
	if f.calls <= f.failures {
		return errors.New("connection refused")
	}
	return nil
}

func (f *fakeExec) Stop(_ context.Context, t executor.Target, requeue bool, grace time.Duration) (executor.Outcome, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fail(); err != nil {
		return executor.Outcome{}, err
	}
	f.stops, f.requeues, f.graces = append(f.stops, t), append(f.requeues, requeue), append(f.graces, grace)
	return executor.Outcome{Done: true, Detail: "stopped"}, nil
}

func (f *fakeExec) Resume(_ context.Context, t executor.Target) (executor.Outcome, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resumes = append(f.resumes, t)
	return executor.Outcome{Done: true, Detail: "resumed"}, nil
}

func (f *fakeExec) Kill(_ context.Context, t executor.Target, _ time.Duration) (executor.Outcome, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fail(); err != nil {
		return executor.Outcome{}, err
	}
	f.kills = append(f.kills, t)
	return executor.Outcome{Done: true, Detail: "killed"}, nil
}

// harness is a service on a fake clock with in-memory fakes around it.
type harness struct {
	t     *testing.T
	clock *fakeClock
	svc   *Service
	rec   *MemoryRecorder
	pub   *MemoryPublisher
	note  *MemoryNotifier
	exec  *fakeExec
}

func newHarness(t *testing.T, cfg Config, opts ...Option) *harness {
	t.Helper()
	h := &harness{t: t, clock: &fakeClock{t: t0}, rec: NewMemoryRecorder(), pub: &MemoryPublisher{}, note: &MemoryNotifier{}, exec: &fakeExec{}}
	h.start(cfg, opts...)
	return h
}

// start (re)builds the service over the harness's recorder, as a restart would.
func (h *harness) start(cfg Config, opts ...Option) {
	h.t.Helper()
	all := append([]Option{
		WithClock(h.clock.now), WithRecorder(h.rec), WithPublisher(h.pub), WithNotifier(h.note),
		WithExecutor("", h.exec), WithExecutor(schemas.SourceScheduler, h.exec),
		WithSleep(func(context.Context, time.Duration) error { return nil }), WithJobIDPrefix(""),
	}, opts...)
	svc, err := New(cfg, all...)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := svc.Start(h.t.Context()); err != nil {
		h.t.Fatal(err)
	}
	h.svc = svc
}

func (h *harness) pass() {
	h.t.Helper()
	if err := h.svc.Pass(h.t.Context()); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) submit(spec JobSpec) Job {
	h.t.Helper()
	j, err := h.svc.Submit(h.t.Context(), spec)
	if err != nil {
		h.t.Fatalf("submit %+v: %v", spec, err)
	}
	return j
}

func (h *harness) job(id string) Job {
	h.t.Helper()
	j, err := h.svc.Job(id)
	if err != nil {
		h.t.Fatal(err)
	}
	return j
}

// rows returns the audit rows with the given decision (all when empty).
func (h *harness) rows(decision string) []Action {
	h.t.Helper()
	rows, err := h.rec.Actions(h.t.Context(), ActionFilter{Decision: decision})
	if err != nil {
		h.t.Fatal(err)
	}
	return rows
}

// rowsFor returns the decisions recorded about a job (any attempt), in order.
func (h *harness) rowsFor(id string) []string {
	var out []string
	for _, a := range h.rows("") {
		if jobIDOf(a.Job) == id && a.Decision != DecSkip {
			out = append(out, a.Decision+":"+a.Outcome)
		}
	}
	return out
}

// events returns the published events of one attempt key.
func (h *harness) events(key string) []string {
	var out []string
	for _, e := range h.pub.Events() {
		if e.Job == key {
			out = append(out, e.Event)
		}
	}
	return out
}

func wantState(t *testing.T, j Job, state JobState, attempt int) {
	t.Helper()
	if j.State != state || j.Attempt != attempt {
		t.Fatalf("job %s: state %s attempt %d, want %s attempt %d (wait: %s)", j.ID, j.State, j.Attempt, state, attempt, j.WaitReason)
	}
}

func wantSeq(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s:\n got  %v\n want %v", what, got, want)
	}
}
