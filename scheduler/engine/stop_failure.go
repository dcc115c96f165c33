package engine

import (
	"fmt"
	"time"
)

// FailedRounds is how many rounds of tries (each of Retry.Attempts calls) a stop,
// kill or policy step gets when its executor keeps failing: after the last one it
// is reported failed for good and not tried again.
const FailedRounds = 3

// StopFailed undoes a reclaim whose stop the executor refused or failed: the job
// keeps its GPUs, as KeepRunning does. A refusal, or the FailedRounds-th failure,
// means the engine never orders this attempt stopped again (so that no pass asks
// for what cannot be done); otherwise it is not chosen again before retryAt. It
// returns whether the job is now left alone for good.
func (e *Engine) StopFailed(id string, refused bool, retryAt time.Time) (final bool, err error) {
	j := e.jobs[id]
	if j == nil {
		return false, fmt.Errorf("%w %q", ErrUnknownJob, id)
	}
	if err := e.KeepRunning(id); err != nil {
		return false, err
	}
	e.touch(j)
	j.stopFailures++
	if refused || j.stopFailures >= FailedRounds {
		j.noStop = true
	} else {
		j.stopRetryAt = retryAt
	}
	return j.noStop, nil
}

// stoppable reports whether running job v may be ordered stopped at the engine's
// current pass: not after its executor refused or kept failing, nor during the
// backoff after a failure.
func (e *Engine) stoppable(v *Job) bool {
	return !v.noStop && !e.now.Before(v.stopRetryAt)
}

// resetStopFailures forgets failed stops (a new attempt starts clean).
func (j *Job) resetStopFailures() {
	j.stopFailures, j.noStop, j.stopRetryAt = 0, false, time.Time{}
}

// StopFailures is how many stops of the job's current attempt failed.
func (j *Job) StopFailures() int { return j.stopFailures }
