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
	"github.com/gpupool/gpupool/bus/agentwire"
	"github.com/gpupool/gpupool/schemas"
)

// Config configures the agent.
type Config struct {
	Cluster string `yaml:"cluster"`
	Node    string `yaml:"node"`
	// PublicKeyFile holds the scheduler's ed25519 public key (PEM; two while the
	// scheduler's key is replaced): commands not signed with its private key are
	// refused. The default for new setups.
	PublicKeyFile string `yaml:"public_key_file"`
	// SecretFile holds a secret shared with the scheduler (HMAC-SHA256) instead:
	// any node holding it can sign commands for every other node. Set one of the
	// two; the agent does not start without.
	SecretFile string `yaml:"secret_file"`
	// MaxGrace caps the grace period a command may ask for.
	MaxGrace time.Duration `yaml:"max_grace"`
	// MaxSkew refuses commands issued longer ago (or further ahead) than this;
	// each command's nonce is remembered that long, so a replayed one is refused.
	MaxSkew time.Duration `yaml:"max_skew"`
	// ProcRoot is where /proc is (tests use fixtures).
	ProcRoot string `yaml:"proc_root"`
	// StateDir keeps the nonces of accepted commands (commands.jsonl, 0600, in a
	// 0700 directory), each until its command goes stale, written before the
	// command is carried out: a restarted agent refuses a replay of a command it
	// accepted before. The collector sets it to <data_dir>/agent. Empty: nonces are
	// kept in memory only, and a restart within max_skew forgets them.
	StateDir string `yaml:"state_dir"`
	// ProtectedPools are pools whose processes this agent never signals: a
	// command naming one of them, or for a PID whose job attribution places in one
	// (a pod label, GPUPOOL_POOL, a mapping rule), is refused.
	ProtectedPools []string `yaml:"protected_pools"`
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
	case c.PublicKeyFile == "" && c.SecretFile == "":
		return schemas.Field("public_key_file", errors.New("empty (the scheduler's ed25519 public key, to check commands with; or secret_file, a secret shared with the scheduler)"))
	case c.PublicKeyFile != "" && c.SecretFile != "":
		return errors.New("public_key_file and secret_file: set one, not both")
	case c.MaxGrace <= 0:
		return schemas.Fieldf("max_grace", "%s must be positive", c.MaxGrace)
	case c.MaxSkew <= 0:
		return schemas.Fieldf("max_skew", "%s must be positive", c.MaxSkew)
	}
	return nil
}

// Enabled reports whether a key or secret is set, so the collector runs the agent.
func (c Config) Enabled() bool { return c.PublicKeyFile != "" || c.SecretFile != "" }

// verifier reads the key or secret that commands are checked with.
func (c Config) verifier() (agentwire.Verifier, error) {
	if c.PublicKeyFile != "" {
		keys, err := agentwire.LoadPublicKeys(c.PublicKeyFile)
		if err != nil {
			return nil, fmt.Errorf("public_key_file: %w", err)
		}
		return keys, nil
	}
	secret, err := agentwire.LoadSecret(c.SecretFile)
	if err != nil {
		return nil, fmt.Errorf("secret_file: %w", err)
	}
	return secret, nil
}

// ProcessView tells the agent which processes held a GPU in the last sample, with
// their job keys; the collector implements it.
type ProcessView interface {
	GPUProcesses() map[uint32]string
}

// Agent answers commands for one node.
type Agent struct {
	cfg   Config
	nc    *nats.Conn
	procs ProcessView
	keys  agentwire.Verifier
	log   *slog.Logger
	self  int
	now   func() time.Time
	attr  Attributor // nil: the last sample's job only
	state *nonceLog  // nil without a state_dir

	listening chan struct{} // closed once Run's subscription is live

	mu     sync.Mutex
	done   map[string]doneCmd   // command ID → answer, for repeats
	nonces map[string]time.Time // nonce → when its command goes stale
	busy   map[uint32]bool      // PIDs being handled
	wg     sync.WaitGroup
}

type doneCmd struct {
	res agentwire.Result
	at  time.Time
}

// Option changes how an Agent is built.
type Option func(*Agent)

// WithClock sets the agent's clock (default time.Now).
func WithClock(now func() time.Time) Option {
	return func(a *Agent) {
		if now != nil {
			a.now = now
		}
	}
}

// WithLogger sets the agent's logger (default: discarded).
func WithLogger(log *slog.Logger) Option {
	return func(a *Agent) {
		if log != nil {
			a.log = log
		}
	}
}

// New returns an agent; it reads the key or secret file now.
func New(cfg Config, nc *nats.Conn, procs ProcessView, opts ...Option) (*Agent, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	keys, err := cfg.verifier()
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	a := &Agent{
		cfg: cfg, nc: nc, procs: procs, keys: keys, log: slog.New(slog.DiscardHandler),
		self: os.Getpid(), now: time.Now,
		done: map[string]doneCmd{}, nonces: map[string]time.Time{}, busy: map[uint32]bool{}, listening: make(chan struct{}),
	}
	for _, o := range opts {
		o(a)
	}
	a.log = a.log.With("component", "agent", "cluster", cfg.Cluster, "node", cfg.Node)
	if cfg.StateDir != "" {
		if a.state, a.nonces, err = openNonceLog(cfg.StateDir, a.now(), cfg.MaxSkew, a.log); err != nil {
			return nil, fmt.Errorf("agent: %w", err)
		}
	} else {
		a.log.Warn("agent.state_dir is not set: accepted commands are remembered in memory only, so an agent restarted within max_skew would accept one replayed")
	}
	return a, nil
}

// Listening is closed once Run subscribes: commands sent after it are answered.
func (a *Agent) Listening() <-chan struct{} { return a.listening }

// Run answers commands until ctx ends, then waits for commands in progress.
func (a *Agent) Run(ctx context.Context) error {
	defer a.closeState()
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
	a.log.Info("node agent listening", "subject", subject, "alg", a.keys.Alg())
	<-ctx.Done()
	_ = sub.Unsubscribe()
	a.wg.Wait()
	return nil
}

// handle checks and carries out one command.
func (a *Agent) handle(ctx context.Context, data []byte) agentwire.Result {
	now := a.now()
	cmd, err := agentwire.Open(data, a.keys, now, a.cfg.MaxSkew)
	if err == nil && (cmd.Cluster != a.cfg.Cluster || cmd.Node != a.cfg.Node) {
		err = fmt.Errorf("%w: %s/%s, this agent is %s/%s", agentwire.ErrWrongNode, cmd.Cluster, cmd.Node, a.cfg.Cluster, a.cfg.Node)
	}
	a.mu.Lock()
	a.expire()
	if err == nil {
		if _, seen := a.nonces[cmd.Nonce]; seen {
			err = fmt.Errorf("%w: nonce %s was received before", agentwire.ErrReplayed, cmd.Nonce)
		} else {
			// Past IssuedAt+MaxSkew the command is stale: the nonce need not be kept.
			a.nonces[cmd.Nonce] = cmd.IssuedAt.Add(a.cfg.MaxSkew)
			// On disk before anything is done, so that a restart cannot forget it.
			if a.state != nil {
				if serr := a.state.add(nonceRecord{Nonce: cmd.Nonce, ID: cmd.ID, IssuedMs: ceilMs(cmd.IssuedAt)}); serr != nil {
					err = fmt.Errorf("agent: cannot record the command before acting on it: %w", serr)
				}
			}
		}
	}
	if err != nil {
		a.mu.Unlock()
		a.log.Warn("command refused", "id", cmd.ID, "err", err)
		return agentwire.Result{ID: cmd.ID, PID: cmd.PID, Outcome: agentwire.OutcomeRefused, Error: err.Error()}
	}
	if d, ok := a.done[cmd.ID]; ok {
		a.mu.Unlock()
		return d.res
	}
	if reason := a.refusal(cmd); reason != "" {
		a.mu.Unlock()
		res := agentwire.Result{ID: cmd.ID, PID: cmd.PID, Outcome: agentwire.OutcomeRefused, Error: reason}
		a.remember(res)
		a.log.Warn("command refused", "id", cmd.ID, "pid", cmd.PID, "reason", reason)
		return res
	}
	sampleJob := a.procs.GPUProcesses()[cmd.PID]
	a.busy[cmd.PID] = true
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.busy, cmd.PID)
		a.mu.Unlock()
	}()
	// The PID's job and pool, read afresh from its cgroup: a command names a
	// process of the job it is about, never a protected one.
	if reason, gone := a.ownership(ctx, cmd, sampleJob); gone {
		res := agentwire.Result{ID: cmd.ID, PID: cmd.PID, Outcome: agentwire.OutcomeExited}
		a.remember(res)
		return res
	} else if reason != "" {
		res := agentwire.Result{ID: cmd.ID, PID: cmd.PID, Outcome: agentwire.OutcomeRefused, Error: reason}
		a.remember(res)
		a.log.Warn("command refused", "id", cmd.ID, "pid", cmd.PID, "job", cmd.Job, "pool", cmd.Pool, "reason", reason)
		return res
	}
	res := a.stop(ctx, cmd)
	a.remember(res)
	a.log.Info("command done", "id", cmd.ID, "pid", cmd.PID, "job", cmd.Job, "pool", cmd.Pool, "action", cmd.Action,
		"outcome", res.Outcome, "reason", cmd.Reason, "duration_ms", res.DurationMs)
	return res
}

// refusal says why cmd may not be carried out, or "" if it may. Called with a.mu.
func (a *Agent) refusal(cmd agentwire.Command) string {
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

func (a *Agent) remember(res agentwire.Result) {
	a.mu.Lock()
	a.done[res.ID] = doneCmd{res: res, at: a.now()}
	a.mu.Unlock()
}

// expire forgets answers older than twice MaxSkew, and the nonces of commands
// gone stale: a repeat that late is refused as stale anyway. Called with a.mu.
func (a *Agent) expire() {
	now := a.now()
	for id, d := range a.done {
		if now.Sub(d.at) > 2*a.cfg.MaxSkew {
			delete(a.done, id)
		}
	}
	for n, stale := range a.nonces {
		if now.After(stale) {
			delete(a.nonces, n)
		}
	}
	if a.state != nil {
		a.state.compact(a.nonces, a.cfg.MaxSkew)
	}
}

// closeState closes the record of accepted commands.
func (a *Agent) closeState() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.state != nil {
		if err := a.state.close(); err != nil {
			a.log.Warn("closing the agent's command record", "err", err)
		}
		a.state = nil
	}
}

// stop signals the process and waits for it to go.
func (a *Agent) stop(ctx context.Context, cmd agentwire.Command) agentwire.Result {
	start := a.now()
	res := agentwire.Result{ID: cmd.ID, PID: cmd.PID}
	pid := int(cmd.PID)
	if !a.alive(pid) {
		res.Outcome = agentwire.OutcomeExited
		return res
	}
	finish := func(outcome string) agentwire.Result {
		res.Outcome = outcome
		res.DurationMs = a.now().Sub(start).Milliseconds()
		return res
	}
	if cmd.Action == agentwire.ActionTerminate {
		grace, _ := schemas.SecondsFloat("grace_seconds", cmd.GraceSeconds) // checked when the command was read
		grace = min(grace, a.cfg.MaxGrace)
		if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
			if errors.Is(err, syscall.ESRCH) {
				return finish(agentwire.OutcomeExited)
			}
			res.Error = "SIGTERM: " + err.Error()
			return finish(agentwire.OutcomeFailed)
		}
		res.Signals = append(res.Signals, "SIGTERM")
		if a.waitGone(ctx, pid, grace) {
			return finish(agentwire.OutcomeTerminated)
		}
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		res.Error = "SIGKILL: " + err.Error()
		return finish(agentwire.OutcomeFailed)
	}
	res.Signals = append(res.Signals, "SIGKILL")
	if a.waitGone(ctx, pid, 10*time.Second) {
		return finish(agentwire.OutcomeKilled)
	}
	res.Error = "process still present 10s after SIGKILL (uninterruptible sleep in the driver?)"
	return finish(agentwire.OutcomeFailed)
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
