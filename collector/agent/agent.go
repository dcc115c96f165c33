package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gpupool/gpupool/bus"
)

// Config configures the agent.
type Config struct {
	Cluster string `yaml:"cluster"`
	Node    string `yaml:"node"`
	// SecretFile holds the secret shared with the scheduler; commands not signed
	// with it are refused. The agent does not start without one.
	SecretFile string `yaml:"secret_file"`
	// MaxGrace caps the grace period a command may ask for.
	MaxGrace time.Duration `yaml:"max_grace"`
	// MaxSkew refuses commands issued longer ago (or further ahead) than this.
	MaxSkew time.Duration `yaml:"max_skew"`
	// ProcRoot is where /proc is (tests use fixtures).
	ProcRoot string `yaml:"proc_root"`
}

// DefaultConfig returns the agent defaults.
func DefaultConfig() Config {
	return Config{MaxGrace: 5 * time.Minute, MaxSkew: time.Minute, ProcRoot: "/proc"}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	switch {
	case c.Cluster == "" || c.Node == "":
		return errors.New("cluster and node: both are needed to pick the command subject")
	case c.SecretFile == "":
		return errors.New("secret_file: the agent needs the scheduler's shared secret")
	case c.MaxGrace <= 0:
		return fmt.Errorf("max_grace: %s must be positive", c.MaxGrace)
	case c.MaxSkew <= 0:
		return fmt.Errorf("max_skew: %s must be positive", c.MaxSkew)
	}
	return nil
}

// ProcessView tells the agent which processes held a GPU in the last sample, with
// their job keys; the collector implements it.
type ProcessView interface {
	GPUProcesses() map[uint32]string
}

// Agent answers commands for one node.
type Agent struct {
	cfg    Config
	nc     *nats.Conn
	procs  ProcessView
	secret []byte
	log    *slog.Logger
	self   int
	now    func() time.Time

	listening chan struct{} // closed once Run's subscription is live

	mu   sync.Mutex
	done map[string]doneCmd // command ID → answer, for repeats
	busy map[uint32]bool    // PIDs being handled
	wg   sync.WaitGroup
}

type doneCmd struct {
	res Result
	at  time.Time
}

// Option changes how an Agent is built.
type Option func(*Agent)

// WithLogger sets the agent's logger (default: discarded).
func WithLogger(log *slog.Logger) Option {
	return func(a *Agent) {
		if log != nil {
			a.log = log
		}
	}
}

// New returns an agent; it reads the secret file now.
func New(cfg Config, nc *nats.Conn, procs ProcessView, opts ...Option) (*Agent, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	secret, err := os.ReadFile(cfg.SecretFile)
	if err != nil {
		return nil, fmt.Errorf("agent: secret_file: %w", err)
	}
	secret = []byte(strings.TrimSpace(string(secret)))
	if len(secret) < 16 {
		return nil, fmt.Errorf("agent: secret_file %s: the secret must be at least 16 bytes", cfg.SecretFile)
	}
	a := &Agent{
		cfg: cfg, nc: nc, procs: procs, secret: secret, log: slog.New(slog.DiscardHandler),
		self: os.Getpid(), now: time.Now,
		done: map[string]doneCmd{}, busy: map[uint32]bool{}, listening: make(chan struct{}),
	}
	for _, o := range opts {
		o(a)
	}
	a.log = a.log.With("component", "agent", "cluster", cfg.Cluster, "node", cfg.Node)
	return a, nil
}

// Listening is closed once Run subscribes: commands sent after it are answered.
func (a *Agent) Listening() <-chan struct{} { return a.listening }

// Run answers commands until ctx ends, then waits for commands in progress.
func (a *Agent) Run(ctx context.Context) error {
	subject := bus.ActionsSubject(a.cfg.Cluster, a.cfg.Node)
	sub, err := a.nc.Subscribe(subject, func(m *nats.Msg) {
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			res := a.handle(ctx, m.Data)
			data, _ := json.Marshal(res)
			if err := m.Respond(data); err != nil {
				a.log.Warn("reply failed", "id", res.ID, "err", err)
			}
		}()
	})
	if err != nil {
		return fmt.Errorf("agent: subscribe %s: %w", subject, err)
	}
	// Once the server has the subscription, a command sent now is answered.
	if err := a.nc.FlushTimeout(10 * time.Second); err != nil && ctx.Err() == nil {
		a.log.Warn("flush subscription", "subject", subject, "err", err)
	}
	close(a.listening)
	a.log.Info("node agent listening", "subject", subject)
	<-ctx.Done()
	_ = sub.Unsubscribe()
	a.wg.Wait()
	return nil
}

// handle checks and carries out one command.
func (a *Agent) handle(ctx context.Context, data []byte) Result {
	cmd, err := Open(data, a.secret, a.now(), a.cfg.MaxSkew)
	if err != nil {
		a.log.Warn("command refused", "err", err)
		return Result{ID: cmd.ID, PID: cmd.PID, Outcome: OutcomeRefused, Error: err.Error()}
	}
	a.mu.Lock()
	a.expire()
	if d, ok := a.done[cmd.ID]; ok {
		a.mu.Unlock()
		return d.res
	}
	if reason := a.refusal(cmd); reason != "" {
		a.mu.Unlock()
		res := Result{ID: cmd.ID, PID: cmd.PID, Outcome: OutcomeRefused, Error: reason}
		a.remember(res)
		a.log.Warn("command refused", "id", cmd.ID, "pid", cmd.PID, "reason", reason)
		return res
	}
	a.busy[cmd.PID] = true
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.busy, cmd.PID)
		a.mu.Unlock()
	}()
	res := a.stop(ctx, cmd)
	a.remember(res)
	a.log.Info("command done", "id", cmd.ID, "pid", cmd.PID, "job", cmd.Job, "action", cmd.Action,
		"outcome", res.Outcome, "reason", cmd.Reason, "duration_ms", res.DurationMs)
	return res
}

// refusal says why cmd may not be carried out, or "" if it may. Called with a.mu.
func (a *Agent) refusal(cmd Command) string {
	switch {
	case cmd.PID <= 1:
		return "refusing to signal PID 1"
	case int(cmd.PID) == a.self:
		return "refusing to signal the collector itself"
	case a.busy[cmd.PID]:
		return fmt.Sprintf("PID %d is already being stopped", cmd.PID)
	}
	job, ok := a.procs.GPUProcesses()[cmd.PID]
	if !ok {
		return fmt.Sprintf("PID %d held no GPU in the last sample", cmd.PID)
	}
	if cmd.Job != "" && job != cmd.Job {
		return fmt.Sprintf("PID %d belongs to job %q, not %q", cmd.PID, job, cmd.Job)
	}
	return ""
}

func (a *Agent) remember(res Result) {
	a.mu.Lock()
	a.done[res.ID] = doneCmd{res: res, at: a.now()}
	a.mu.Unlock()
}

// expire forgets answers older than twice MaxSkew: a repeat that late is refused
// as stale anyway. Called with a.mu.
func (a *Agent) expire() {
	for id, d := range a.done {
		if a.now().Sub(d.at) > 2*a.cfg.MaxSkew {
			delete(a.done, id)
		}
	}
}

// stop signals the process and waits for it to go.
func (a *Agent) stop(ctx context.Context, cmd Command) Result {
	start := a.now()
	res := Result{ID: cmd.ID, PID: cmd.PID}
	pid := int(cmd.PID)
	if !a.alive(pid) {
		res.Outcome = OutcomeExited
		return res
	}
	finish := func(outcome string) Result {
		res.Outcome = outcome
		res.DurationMs = a.now().Sub(start).Milliseconds()
		return res
	}
	if cmd.Action == ActionTerminate {
		grace := min(time.Duration(cmd.GraceSeconds*float64(time.Second)), a.cfg.MaxGrace)
		if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
			if errors.Is(err, syscall.ESRCH) {
				return finish(OutcomeExited)
			}
			res.Error = "SIGTERM: " + err.Error()
			return finish(OutcomeFailed)
		}
		res.Signals = append(res.Signals, "SIGTERM")
		if a.waitGone(ctx, pid, grace) {
			return finish(OutcomeTerminated)
		}
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		res.Error = "SIGKILL: " + err.Error()
		return finish(OutcomeFailed)
	}
	res.Signals = append(res.Signals, "SIGKILL")
	if a.waitGone(ctx, pid, 10*time.Second) {
		return finish(OutcomeKilled)
	}
	res.Error = "process still present 10s after SIGKILL (uninterruptible sleep in the driver?)"
	return finish(OutcomeFailed)
}

// waitGone polls until pid is gone or d passes.
func (a *Agent) waitGone(ctx context.Context, pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if !a.alive(pid) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return !a.alive(pid)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// alive reports whether pid exists and is not a zombie waiting to be reaped.
func (a *Agent) alive(pid int) bool {
	data, err := os.ReadFile(filepath.Join(a.cfg.ProcRoot, strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses, which may hold spaces.
	if i := strings.LastIndexByte(string(data), ')'); i >= 0 && i+2 < len(data) {
		return data[i+2] != 'Z' && data[i+2] != 'X'
	}
	return true
}

// Send signs cmd, sends it to the node's agent and returns its answer. The
// scheduler's executors and tests use it.
func Send(ctx context.Context, nc *nats.Conn, cluster, node string, cmd Command, secret []byte) (Result, error) {
	data, err := Seal(cmd, secret)
	if err != nil {
		return Result{}, err
	}
	msg, err := nc.RequestWithContext(ctx, bus.ActionsSubject(cluster, node), data)
	if err != nil {
		return Result{}, fmt.Errorf("agent: send %s to %s/%s: %w", cmd.ID, cluster, node, err)
	}
	var res Result
	if err := json.Unmarshal(msg.Data, &res); err != nil {
		return Result{}, fmt.Errorf("agent: answer from %s/%s: %w", cluster, node, err)
	}
	return res, nil
}
