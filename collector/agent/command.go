package agent

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
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
	ID     string `json:"id"`
	Action string `json:"action"`
	PID    uint32 `json:"pid"`
	// Job, when set, must be the job the PID belonged to in the last sample (so a
	// reused PID is never signalled).
	Job          string    `json:"job,omitempty"`
	GraceSeconds float64   `json:"grace_seconds,omitempty"`
	Reason       string    `json:"reason,omitempty"`
	IssuedAt     time.Time `json:"issued_at"`
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

// envelope is what travels: the command's exact bytes and their signature.
type envelope struct {
	Command   json.RawMessage `json:"command"`
	Signature string          `json:"signature"`
}

// Errors a command can be refused with.
var (
	ErrBadSignature = errors.New("agent: command signature does not match the shared secret")
	ErrStale        = errors.New("agent: command is too old or from the future")
	ErrBadCommand   = errors.New("agent: malformed command")
)

func sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// Seal signs cmd with secret and returns the bytes to send.
func Seal(cmd Command, secret []byte) ([]byte, error) {
	body, err := json.Marshal(cmd)
	if err != nil {
		return nil, fmt.Errorf("agent: encode command: %w", err)
	}
	return json.Marshal(envelope{Command: body, Signature: sign(secret, body)})
}

// Open checks the signature and freshness of data and returns its command.
func Open(data, secret []byte, now time.Time, maxSkew time.Duration) (Command, error) {
	var env envelope
	var cmd Command
	if err := json.Unmarshal(data, &env); err != nil || len(env.Command) == 0 {
		return cmd, fmt.Errorf("%w: not a signed command envelope", ErrBadCommand)
	}
	want := sign(secret, env.Command)
	if !hmac.Equal([]byte(want), []byte(env.Signature)) {
		return cmd, ErrBadSignature
	}
	if err := json.Unmarshal(env.Command, &cmd); err != nil {
		return cmd, fmt.Errorf("%w: %v", ErrBadCommand, err)
	}
	if cmd.ID == "" || cmd.PID == 0 || (cmd.Action != ActionTerminate && cmd.Action != ActionKill) || cmd.GraceSeconds < 0 {
		return cmd, fmt.Errorf("%w: needs id, pid, action terminate|kill and a non-negative grace", ErrBadCommand)
	}
	if d := now.Sub(cmd.IssuedAt); d > maxSkew || d < -maxSkew {
		return cmd, fmt.Errorf("%w: issued %s, now %s", ErrStale, cmd.IssuedAt.Format(time.RFC3339), now.Format(time.RFC3339))
	}
	return cmd, nil
}
