package slurm

import (
	"context"
	"errors"
	"strings"
)

// ErrTimeout means a command did not finish within Config.Timeout; it is retryable.
var ErrTimeout = errors.New("slurm command timed out")

// ErrUnavailable means the command could not reach slurmctld, or Slurm asked to try
// again later; it is retryable.
var ErrUnavailable = errors.New("slurm controller unavailable")

// ErrCompleting means the job is COMPLETING: its processes and epilog are ending
// (after a cancel, or a requeue that will make it pending again), so it cannot be
// released yet; it is retryable.
var ErrCompleting = errors.New("slurm job completing")

// IsRetryable reports whether err is worth retrying unchanged later: a timeout, an
// unreachable or busy controller, or a job still completing.
func IsRetryable(err error) bool {
	return errors.Is(err, ErrTimeout) || errors.Is(err, ErrUnavailable) || errors.Is(err, ErrCompleting) || errors.Is(err, context.DeadlineExceeded)
}

// verdict is what a Slurm error message means to the executor.
type verdict int

const (
	vOther       verdict = iota // an error to report as it is
	vNotFound                   // the job is unknown
	vDone                       // the job has ended, or is ending
	vPending                    // the job is already pending (requeued)
	vNotPending                 // the job is no longer pending (release of a running job)
	vUnsupported                // requeue is disabled for the job, or it is not a batch job
	vUnavailable                // the controller is unreachable or busy
)

// messages are Slurm's error strings (slurm_errno.c, the socket layer) and their
// meaning. Slurm has no machine-readable error on the command line, so the text is
// the interface; a message not listed here is reported as an error.
var messages = []struct {
	text string
	v    verdict
}{
	{"Invalid job id specified", vNotFound},
	{"Job/step already completing or completed", vDone},
	{"Job has already finished", vDone},
	{"Job is no longer pending execution", vNotPending},
	{"Job is pending execution", vPending},
	{"Requested operation is presently disabled", vUnsupported},
	{"Only batch jobs are accepted or processed", vUnsupported},
	{"Unable to contact slurm controller", vUnavailable},
	{"Socket timed out on send/recv operation", vUnavailable},
	{"Job can not be altered now, try again later", vUnavailable},
	{"Slurm backup controller in standby mode", vUnavailable},
}

// classify reads a command's stderr.
func classify(stderr string) verdict {
	for _, m := range messages {
		if strings.Contains(stderr, m.text) {
			return m.v
		}
	}
	return vOther
}
