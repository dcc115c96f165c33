package scheduler

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// Notifier tells owners (Slack, e-mail) of the notices policies send. The bus
// notifier (scheduler/audit) hands them to the alerter; the default logs.
type Notifier interface {
	Notify(ctx context.Context, n schemas.Notice) error
}

// LogNotifier writes notices to a logger.
type LogNotifier struct{ Log *slog.Logger }

// Notify logs n.
func (l LogNotifier) Notify(_ context.Context, n schemas.Notice) error {
	l.Log.Info("notify owner", "team", n.Team, "job", n.Job, "policy", n.Policy, "finding", n.Finding.Kind, "message", n.Message)
	return nil
}

// MemoryNotifier keeps notices, for tests. It is safe for concurrent use.
type MemoryNotifier struct {
	mu      sync.Mutex
	notices []schemas.Notice
}

// Notify appends n.
func (m *MemoryNotifier) Notify(_ context.Context, n schemas.Notice) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.notices = append(m.notices, n)
	return nil
}

// Notices returns what was sent.
func (m *MemoryNotifier) Notices() []schemas.Notice {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]schemas.Notice(nil), m.notices...)
}

// FindingSource lists the findings open now (the analyzer's findings_open view).
type FindingSource interface {
	Findings(ctx context.Context, now time.Time) ([]schemas.Finding, error)
}
