package scheduler

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Notice is a message to a job's owner about a finding a policy acts on.
type Notice struct {
	Time    time.Time
	Team    string
	Project string
	Job     string
	Policy  string
	Finding Finding
	// NextAction is what the policy will do next (reclaim, kill, …) at NextAt,
	// unless the finding clears; empty when this is the last step.
	NextAction string
	NextAt     time.Time
	// Next says it in words.
	Next    string
	Message string
}

// Notifier tells owners (Slack, e-mail). The reports component provides real
// ones; the default logs.
type Notifier interface {
	Notify(ctx context.Context, n Notice) error
}

// LogNotifier writes notices to a logger.
type LogNotifier struct{ Log *slog.Logger }

// Notify logs n.
func (l LogNotifier) Notify(_ context.Context, n Notice) error {
	l.Log.Info("notify owner", "team", n.Team, "job", n.Job, "policy", n.Policy, "finding", n.Finding.Kind, "message", n.Message)
	return nil
}

// MemoryNotifier keeps notices, for tests. It is safe for concurrent use.
type MemoryNotifier struct {
	mu      sync.Mutex
	notices []Notice
}

// Notify appends n.
func (m *MemoryNotifier) Notify(_ context.Context, n Notice) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.notices = append(m.notices, n)
	return nil
}

// Notices returns what was sent.
func (m *MemoryNotifier) Notices() []Notice {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Notice(nil), m.notices...)
}

// FindingSource lists the findings open now (the analyzer's findings_open view).
type FindingSource interface {
	Findings(ctx context.Context, now time.Time) ([]Finding, error)
}
