package agentexec

import "errors"

// ErrRefused means the agent refused the command and signalled nothing; the error
// carries the agent's reason. Retrying the same command gets the same answer.
var ErrRefused = errors.New("node agent refused the command")

// ErrFailed means the agent tried and failed to stop the process (a signal
// failed, or the process outlived SIGKILL, e.g. stuck in the driver).
var ErrFailed = errors.New("node agent failed to stop the process")

// ErrUnreachable means no agent answered for the node: it is not running, or the
// answer did not come in time. It is retryable.
var ErrUnreachable = errors.New("node agent unreachable")

// IsRetryable reports whether err is worth retrying later: only an unreachable
// agent. A refusal or failure is the agent's considered answer, and the agent
// repeats it for the same command.
func IsRetryable(err error) bool {
	return errors.Is(err, ErrUnreachable)
}
