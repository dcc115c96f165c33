package sim

import (
	"errors"
	"fmt"

	"github.com/gpupool/gpupool/schemas"
)

// ErrUnknownJob means no running job has the key an executor named.
var ErrUnknownJob = errors.New("no running job with that key")

// ErrUnknownProcess means the node has no leftover (zombie or stray) process with
// the PID an executor named.
var ErrUnknownProcess = errors.New("no leftover process with that pid")

// exitSIGTERM is the exit code of a process ended by SIGTERM (128 + 15).
const exitSIGTERM = 143

// Stop ends a running job the way an executor does (the scheduler reclaiming its
// GPUs, a user cancelling it): one millisecond after the current simulated time
// its processes exit, and the next Advance returns its end event with status and
// exit code 143. Conditions the truth planted for the job end with it. status is
// cancelled, preempted or failed.
func (f *Fleet) Stop(key, status string) error {
	switch status {
	case schemas.StatusCancelled, schemas.StatusPreempted, schemas.StatusFailed:
	default:
		return fmt.Errorf("sim: stop job %q: status %q is not cancelled, preempted or failed", key, status)
	}
	j := f.runningJobs[key]
	if j == nil {
		if f.unadmit(key, status) {
			return nil // admitted, not started: it waits for its gate again
		}
		return fmt.Errorf("sim: stop job %q: %w", key, ErrUnknownJob)
	}
	j.stopping = true
	f.push(event{atMs: f.nowMs + 1, kind: evStop, j: j, status: status})
	return nil
}

// Kill ends a leftover process, a zombie or a stray, the way the node agent does:
// one millisecond after the current simulated time it is gone and its GPU is free
// again; its zombie truth ends then. Processes of running jobs are ended with
// Stop.
func (f *Fleet) Kill(node string, pid uint32) error {
	for _, n := range f.nodes {
		if n.name != node {
			continue
		}
		if _, ok := n.leftover(pid); !ok {
			return fmt.Errorf("sim: kill pid %d on %s: %w", pid, node, ErrUnknownProcess)
		}
		f.push(event{atMs: f.nowMs + 1, kind: evProcEnd, n: n, pid: pid})
		return nil
	}
	return fmt.Errorf("sim: kill pid %d: no node %q", pid, node)
}
