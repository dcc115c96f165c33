package scheduler

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gpupool/gpupool/scheduler/engine"
	"github.com/gpupool/gpupool/schemas"
)

// Audit decisions (Action.Decision): what the scheduler decided.
const (
	DecAdmit     = "admit"     // a job got GPUs
	DecBorrow    = "borrow"    // … some of them beyond its queue's nominal quota
	DecReclaim   = "reclaim"   // GPUs taken back: borrowed capacity for a lender, or a policy on a finding
	DecPreempt   = "preempt"   // a job stopped for a higher-priority one
	DecRequeue   = "requeue"   // a stopped job went back to its queue, place kept
	DecResume    = "resume"    // a requeued job's executor let it run again (unsuspend, release)
	DecStop      = "stop"      // a job stopped for good (past its time limit, a cancel policy)
	DecExpire    = "expire"    // a job ran past its time limit
	DecNotify    = "notify"    // an owner was told
	DecKill      = "kill"      // a process was killed
	DecCancel    = "cancel"    // a cancel policy stopped a job
	DecRecommend = "recommend" // a recommendation, nothing changed
	DecSkip      = "skip"      // something was not done; Reason says why
	DecReject    = "reject"    // a submission was refused
	DecSubmit    = "submit"    // a caller queued a job (Actor says who)
	DecFinish    = "finish"    // a caller reported a job's end or cancelled it
	DecPush      = "push"      // a caller pushed a finding, or withdrew one
)

// Outcomes (Action.Outcome).
const (
	OutcomeOK      = "ok"      // done
	OutcomeDryRun  = "dry_run" // would have been done; nothing changed
	OutcomeSkipped = "skipped" // not done, on purpose (Reason)
	OutcomeFailed  = "failed"  // tried, and the executor failed (Reason); nothing moved
)

// Action is one row of the audit trail (the actions table).
type Action struct {
	// ID is derived from the row's content, so a row recorded twice is stored once.
	ID       string    `json:"id"`
	Time     time.Time `json:"time"`
	Decision string    `json:"decision"`
	Outcome  string    `json:"outcome"`
	Reason   string    `json:"reason,omitempty"`
	// Policy and Step name the policy step that acted on a finding.
	Policy string `json:"policy,omitempty"`
	Step   int    `json:"step"`
	// Job is the job key of the attempt acted on.
	Job     string `json:"job,omitempty"`
	Attempt int    `json:"attempt,omitempty"`
	Queue   string `json:"queue,omitempty"`
	Pool    string `json:"pool,omitempty"`
	Team    string `json:"team,omitempty"`
	Project string `json:"project,omitempty"`
	Cluster string `json:"cluster,omitempty"`
	Node    string `json:"node,omitempty"`
	PID     uint32 `json:"pid,omitempty"`
	Card    string `json:"card,omitempty"`
	GPUs    int    `json:"gpus,omitempty"`
	// Borrowed is GPUs beyond the queue's nominal quota (admit, borrow).
	Borrowed       int    `json:"borrowed,omitempty"`
	FindingID      string `json:"finding_id,omitempty"`
	FindingEpisode uint32 `json:"finding_episode,omitempty"`
	FindingKind    string `json:"finding_kind,omitempty"`
	// Executor is the system that carried the action out; Tries is how many calls
	// it took (retries included).
	Executor string            `json:"executor,omitempty"`
	Tries    int               `json:"tries,omitempty"`
	DryRun   bool              `json:"dry_run,omitempty"`
	Details  map[string]string `json:"details,omitempty"`
	// Actor is who asked for the change through the API (auth's method:name, e.g.
	// token:alice); empty for the scheduler's own decisions, except ActorScheduler
	// on what it does on its own to a job outside it (readmit, reactivate, find
	// it gone).
	Actor string `json:"actor,omitempty"`
}

// fill sets the ID from the content.
func (a *Action) fill() {
	h := sha256.New()
	for _, s := range []string{
		strconv.FormatInt(a.Time.UnixMilli(), 10), a.Decision, a.Outcome, a.Reason, a.Policy, strconv.Itoa(a.Step),
		a.Job, a.FindingID, strconv.FormatUint(uint64(a.FindingEpisode), 10), a.Node, strconv.FormatUint(uint64(a.PID), 10),
	} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	if a.Actor != "" { // rows without one keep the IDs they had before actors were recorded
		h.Write([]byte(a.Actor))
	}
	a.ID = hex.EncodeToString(h.Sum(nil)[:12])
}

// ActionFilter selects audit rows; empty fields match everything.
type ActionFilter struct {
	// Since and Until bound the time (Until exclusive; zero: unbounded).
	Since, Until time.Time
	Job          string
	Decision     string
	Pool         string
	Team         string
	// PoliciesOnly keeps rows of policy steps (rebuilding policy state at start).
	PoliciesOnly bool
	// Limit keeps the newest rows (0: all).
	Limit int
}

func (f ActionFilter) match(a *Action) bool {
	return (f.Since.IsZero() || !a.Time.Before(f.Since)) && (f.Until.IsZero() || a.Time.Before(f.Until)) &&
		(f.Job == "" || a.Job == f.Job || jobIDOf(a.Job) == f.Job) && (f.Decision == "" || a.Decision == f.Decision) &&
		(f.Pool == "" || a.Pool == f.Pool) && (f.Team == "" || a.Team == f.Team) && (!f.PoliciesOnly || a.Policy != "")
}

// jobIDOf strips the attempt from a scheduler job key.
func jobIDOf(key string) string {
	if id, _, ok := engine.CutAttempt(key); ok {
		return id
	}
	return key
}

// Recorder keeps the audit trail. The scheduler's idempotency rests on it: at
// start, the policy steps already taken are read back, so a restart does not act
// on a finding twice.
type Recorder interface {
	// Record appends rows; recording the same rows again changes nothing.
	Record(ctx context.Context, rows []Action) error
	// Actions returns the rows f selects, oldest first.
	Actions(ctx context.Context, f ActionFilter) ([]Action, error)
}

// Publisher sends job events (gpupool.jobs.>), so chargeback sees queue waits,
// preemptions and reruns of the scheduler's jobs.
type Publisher interface {
	Publish(ctx context.Context, events []schemas.JobEvent) error
}

// MemoryRecorder keeps the audit trail in memory: for tests, and for a scheduler
// run without a store. It is safe for concurrent use.
type MemoryRecorder struct {
	mu   sync.Mutex
	rows []Action
	ids  map[string]bool
	// frag and fragSeen are the fragmentation samples (fragmentation_record.go).
	frag     []FragmentationSample
	fragSeen map[fragKey]bool
}

var _ Recorder = (*MemoryRecorder)(nil)

// NewMemoryRecorder returns an empty in-memory audit trail.
func NewMemoryRecorder() *MemoryRecorder { return &MemoryRecorder{ids: map[string]bool{}} }

// Record appends rows not recorded before.
func (m *MemoryRecorder) Record(_ context.Context, rows []Action) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range rows {
		if !m.ids[r.ID] {
			m.ids[r.ID] = true
			m.rows = append(m.rows, r)
		}
	}
	return nil
}

// Actions returns the rows f selects, oldest first.
func (m *MemoryRecorder) Actions(_ context.Context, f ActionFilter) ([]Action, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Action
	for i := range m.rows {
		if f.match(&m.rows[i]) {
			out = append(out, m.rows[i])
		}
	}
	slices.SortStableFunc(out, func(a, b Action) int { return a.Time.Compare(b.Time) })
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[len(out)-f.Limit:]
	}
	return out, nil
}

// NopPublisher drops job events.
type NopPublisher struct{}

// Publish does nothing.
func (NopPublisher) Publish(context.Context, []schemas.JobEvent) error { return nil }

// MemoryPublisher keeps published job events, for tests. It is safe for concurrent
// use.
type MemoryPublisher struct {
	mu     sync.Mutex
	events []schemas.JobEvent
}

// Publish appends events.
func (m *MemoryPublisher) Publish(_ context.Context, events []schemas.JobEvent) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events = append(m.events, events...)
	return nil
}

// Events returns a copy of what was published.
func (m *MemoryPublisher) Events() []schemas.JobEvent {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.events)
}
