package agentexec

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gpupool/gpupool/bus/agentwire"
	"github.com/gpupool/gpupool/scheduler/executor"
)

var _ executor.Executor = (*Executor)(nil)

// Executor stops processes through the node agents. It is safe for concurrent use.
type Executor struct {
	cfg    executor.AgentConfig
	nc     *nats.Conn
	signer agentwire.Signer
	log    *slog.Logger
	now    func() time.Time
}

// Option configures New.
type Option func(*Executor)

// WithLogger sets the logger.
func WithLogger(log *slog.Logger) Option {
	return func(e *Executor) { e.log = log }
}

// WithClock sets the clock that stamps commands (IssuedAt).
func WithClock(now func() time.Time) Option {
	return func(e *Executor) { e.now = now }
}

// New returns an executor sending over nc; it reads the key or secret file now.
func New(cfg executor.AgentConfig, nc *nats.Conn, opts ...Option) (*Executor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("agent executor: %w", err)
	}
	if nc == nil {
		return nil, errors.New("agent executor: no NATS connection")
	}
	signer, err := loadSigner(cfg)
	if err != nil {
		return nil, fmt.Errorf("agent executor: %w", err)
	}
	e := &Executor{cfg: cfg, nc: nc, signer: signer, log: slog.New(slog.DiscardHandler), now: time.Now}
	for _, o := range opts {
		o(e)
	}
	e.log = e.log.With("component", "executor", "executor", "agent")
	return e, nil
}

// loadSigner reads the private key or the shared secret.
func loadSigner(cfg executor.AgentConfig) (agentwire.Signer, error) {
	if cfg.PrivateKeyFile != "" {
		key, err := agentwire.LoadPrivateKey(cfg.PrivateKeyFile)
		if err != nil {
			return nil, fmt.Errorf("private_key_file: %w", err)
		}
		return key, nil
	}
	secret, err := agentwire.LoadSecret(cfg.SecretFile)
	if err != nil {
		return nil, fmt.Errorf("secret_file: %w", err)
	}
	return secret, nil
}

// Name returns "agent".
func (e *Executor) Name() string { return "agent" }

// Kill asks the node's agent to end t.PID: SIGTERM then SIGKILL after grace, or
// SIGKILL now when grace is 0.
func (e *Executor) Kill(ctx context.Context, t executor.Target, grace time.Duration) (executor.Outcome, error) {
	return e.signal(ctx, t, grace, "kill")
}

// Stop with a PID is Kill; without one it is ErrUnsupported. requeue is ignored: a
// bare process cannot be requeued.
func (e *Executor) Stop(ctx context.Context, t executor.Target, _ bool, grace time.Duration) (executor.Outcome, error) {
	return e.signal(ctx, t, grace, "stop")
}

// Resume returns ErrUnsupported: a stopped process cannot be resumed.
func (e *Executor) Resume(_ context.Context, t executor.Target) (executor.Outcome, error) {
	return executor.Outcome{}, fmt.Errorf("agent: resume %s: %w (a stopped process cannot be resumed)", t.Job, executor.ErrUnsupported)
}

func (e *Executor) signal(ctx context.Context, t executor.Target, grace time.Duration, why string) (executor.Outcome, error) {
	cluster := cmpOr(t.Cluster, e.cfg.Cluster)
	what := fmt.Sprintf("agent: %s PID %d of %s on %s/%s", why, t.PID, cmpOr(t.Job, "(no job)"), cluster, t.Node)
	switch {
	case t.PID == 0:
		return executor.Outcome{}, fmt.Errorf("%s: %w: no PID", what, executor.ErrUnsupported)
	case t.Node == "":
		return executor.Outcome{}, fmt.Errorf("%s: %w: no node", what, executor.ErrUnsupported)
	case cluster == "":
		return executor.Outcome{}, fmt.Errorf("%s: %w: no cluster in the target or the config", what, executor.ErrUnsupported)
	}
	cmd := agentwire.Command{
		Cluster:  cluster,
		Node:     t.Node,
		Action:   agentwire.ActionKill,
		PID:      t.PID,
		Job:      t.Job,
		Pool:     t.Pool,
		Reason:   e.cfg.Reason + ": " + why,
		IssuedAt: e.now(),
	}
	if grace > 0 {
		cmd.Action, cmd.GraceSeconds = agentwire.ActionTerminate, grace.Seconds()
	}
	cmd.ID = CommandID(cluster, t.Node, t.Job, t.PID, cmd.Action)
	rctx, cancel := context.WithTimeout(ctx, max(grace, 0)+e.cfg.ReplyMargin)
	defer cancel()
	res, err := agentwire.Send(rctx, e.nc, cmd, e.signer)
	switch {
	case err != nil && ctx.Err() != nil:
		return executor.Outcome{}, fmt.Errorf("%s: %w", what, err)
	case err != nil:
		return executor.Outcome{}, fmt.Errorf("%s: %w (is the collector's agent running on the node?): %w", what, ErrUnreachable, err)
	}
	e.log.Info("agent answered", "id", cmd.ID, "job", t.Job, "node", t.Node, "pid", t.PID,
		"action", cmd.Action, "outcome", res.Outcome, "error", res.Error)
	switch res.Outcome {
	case agentwire.OutcomeTerminated, agentwire.OutcomeKilled:
		return executor.Outcome{Done: true, Detail: fmt.Sprintf("PID %d on %s %s (%s) in %dms",
			t.PID, t.Node, res.Outcome, strings.Join(res.Signals, ", "), res.DurationMs)}, nil
	case agentwire.OutcomeExited:
		return executor.Outcome{Detail: fmt.Sprintf("PID %d on %s already gone", t.PID, t.Node)}, nil
	case agentwire.OutcomeRefused:
		return executor.Outcome{}, fmt.Errorf("%s: %w: %s", what, ErrRefused, res.Error)
	case agentwire.OutcomeFailed:
		return executor.Outcome{}, fmt.Errorf("%s: %w: %s", what, ErrFailed, res.Error)
	}
	return executor.Outcome{}, fmt.Errorf("%s: unknown outcome %q from the agent", what, res.Outcome)
}

// CommandID names the command for (cluster, node, job, PID, action): the same
// request retried gets the same ID, which the agent answers once.
func CommandID(cluster, node, job string, pid uint32, action string) string {
	h := sha256.New()
	for _, s := range []string{cluster, node, job, strconv.FormatUint(uint64(pid), 10), action} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return "gpupool-" + hex.EncodeToString(h.Sum(nil)[:12])
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
