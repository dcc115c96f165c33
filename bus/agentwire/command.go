package agentwire

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// Actions.
const (
	ActionTerminate = "terminate" // SIGTERM, then SIGKILL after the grace period
	ActionKill      = "kill"      // SIGKILL now
)

// Outcomes.
const (
	OutcomeTerminated = "terminated" // exited after SIGTERM
	OutcomeKilled     = "killed"     // needed SIGKILL
	OutcomeExited     = "exited"     // was already gone
	OutcomeRefused    = "refused"    // not allowed; nothing was signalled
	OutcomeFailed     = "failed"     // signalling failed
)

// Command asks an agent to stop a process.
type Command struct {
	// ID names the command; a repeat gets the first answer again.
	ID string `json:"id"`
	// Nonce is random, given by Seal to a command without one, so each sealing
	// differs: an agent refuses a nonce it has seen (a replayed message) while the
	// command is fresh.
	Nonce string `json:"nonce"`
	// Cluster and Node name the agent the command is for; any other refuses it.
	Cluster string `json:"cluster"`
	Node    string `json:"node"`
	Action  string `json:"action"`
	PID     uint32 `json:"pid"`
	// Job, when set, must be the job the PID belonged to in the last sample (so a
	// reused PID is never signalled).
	Job string `json:"job,omitempty"`
	// Pool is the pool the scheduler resolved for the job, from its own records or
	// the executor's: an agent refuses a pool it protects (protected_pools), and a
	// pool other than the one attribution gives the PID's job on the node.
	Pool         string  `json:"pool,omitempty"`
	GraceSeconds float64 `json:"grace_seconds,omitempty"`
	Reason       string  `json:"reason,omitempty"`
	// IssuedAt is when the scheduler sealed the command: an agent carries it out
	// only within its max_skew of that.
	IssuedAt time.Time `json:"issued_at"`
}

// Result is the agent's answer.
type Result struct {
	ID      string   `json:"id"`
	PID     uint32   `json:"pid"`
	Outcome string   `json:"outcome"`
	Error   string   `json:"error,omitempty"`
	Signals []string `json:"signals,omitempty"`
	// DurationMs is how long the process took to go.
	DurationMs int64 `json:"duration_ms"`
}

// envelope is what travels: the command's exact bytes, the algorithm that signed
// them (empty: hmac-sha256, from before there was a choice) and the signature
// (hex).
type envelope struct {
	Command   json.RawMessage `json:"command"`
	Alg       string          `json:"alg,omitempty"`
	Signature string          `json:"signature"`
}

// Errors a command can be refused with.
var (
	// ErrBadSignature: the command was not signed by the scheduler's key (or the
	// shared secret), or was changed on the way.
	ErrBadSignature = errors.New("agent: command signature does not match the scheduler's key")
	// ErrStale: the command was issued longer ago, or further ahead, than max_skew.
	ErrStale = errors.New("agent: command is too old or from the future")
	// ErrBadCommand: the message is not a well-formed signed command.
	ErrBadCommand = errors.New("agent: malformed command")
	// ErrWrongNode: the command is for another node's agent.
	ErrWrongNode = errors.New("agent: command is for another node")
	// ErrReplayed: this very message (its nonce) was received before.
	ErrReplayed = errors.New("agent: command replayed")
)

// Seal signs cmd with s and returns the bytes to send; a command without a nonce
// gets a new one.
func Seal(cmd Command, s Signer) ([]byte, error) {
	if cmd.Nonce == "" {
		var n [16]byte
		if _, err := rand.Read(n[:]); err != nil {
			return nil, fmt.Errorf("agent: nonce: %w", err)
		}
		cmd.Nonce = hex.EncodeToString(n[:])
	}
	body, err := json.Marshal(cmd)
	if err != nil {
		return nil, fmt.Errorf("agent: encode command: %w", err)
	}
	return json.Marshal(envelope{Command: body, Alg: s.Alg(), Signature: hex.EncodeToString(s.Sign(body))})
}

// Open checks the signature and freshness of data and returns its command. Which
// node it is for, and whether its nonce was seen, are the agent's to check.
func Open(data []byte, v Verifier, now time.Time, maxSkew time.Duration) (Command, error) {
	var env envelope
	var cmd Command
	if err := json.Unmarshal(data, &env); err != nil || len(env.Command) == 0 {
		return cmd, fmt.Errorf("%w: not a signed command envelope", ErrBadCommand)
	}
	if alg := cmp.Or(env.Alg, AlgHMACSHA256); alg != v.Alg() {
		return cmd, fmt.Errorf("%w: signed with %s, this agent accepts %s only", ErrBadSignature, alg, v.Alg())
	}
	sig, err := hex.DecodeString(env.Signature)
	if err != nil || !v.Verify(env.Command, sig) {
		return cmd, ErrBadSignature
	}
	if err := json.Unmarshal(env.Command, &cmd); err != nil {
		return cmd, fmt.Errorf("%w: %v", ErrBadCommand, err)
	}
	if cmd.ID == "" || cmd.Nonce == "" || cmd.Cluster == "" || cmd.Node == "" || cmd.PID == 0 ||
		(cmd.Action != ActionTerminate && cmd.Action != ActionKill) || cmd.GraceSeconds < 0 {
		return cmd, fmt.Errorf("%w: needs id, nonce, cluster, node, pid, action terminate|kill and a non-negative grace", ErrBadCommand)
	}
	if _, err := schemas.SecondsFloat("grace_seconds", cmd.GraceSeconds); err != nil {
		return cmd, fmt.Errorf("%w: %w", ErrBadCommand, err)
	}
	if d := now.Sub(cmd.IssuedAt); d > maxSkew || d < -maxSkew {
		return cmd, fmt.Errorf("%w: issued %s, now %s", ErrStale, cmd.IssuedAt.Format(time.RFC3339), now.Format(time.RFC3339))
	}
	return cmd, nil
}
