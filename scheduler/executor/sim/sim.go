package sim

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	fleetsim "github.com/gpupool/gpupool/collector/sim"
	"github.com/gpupool/gpupool/scheduler/executor"
	"github.com/gpupool/gpupool/schemas"
)

var _ executor.Executor = (*Executor)(nil)

// Executor acts on a simulated fleet. It is safe for concurrent use as long as
// whoever advances the fleet holds the same lock (WithLock).
type Executor struct {
	fleet *fleetsim.Fleet
	mu    sync.Locker
	// done remembers the jobs stopped and processes killed through this executor,
	// so that repeating an action succeeds with Done false.
	done map[string]bool
}

// Option configures New.
type Option func(*Executor)

// WithLock makes the executor hold mu while it touches the fleet; pass the lock
// the fleet's driver holds around Advance.
func WithLock(mu sync.Locker) Option { return func(e *Executor) { e.mu = mu } }

// New returns an executor for fleet.
func New(fleet *fleetsim.Fleet, opts ...Option) (*Executor, error) {
	if fleet == nil {
		return nil, errors.New("sim executor: no fleet")
	}
	e := &Executor{fleet: fleet, mu: &sync.Mutex{}, done: map[string]bool{}}
	for _, o := range opts {
		o(e)
	}
	return e, nil
}

// Name is "sim".
func (e *Executor) Name() string { return "sim" }

// Stop ends the job 1 ms from the fleet's current time; with requeue its rest is
// resubmitted as the next attempt, keeping its place, after grace (the fleet
// runs it until then, as a job checkpointing would). A job a policy requeues for
// a finding is started again as its owner, told of the finding, would
// (Fleet.RequeueFor).
func (e *Executor) Stop(_ context.Context, t executor.Target, requeue bool, grace time.Duration) (executor.Outcome, error) {
	if t.Job == "" {
		return executor.Outcome{}, fmt.Errorf("sim executor: stop: %w (no job key)", executor.ErrUnsupported)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.done["job:"+t.Job] {
		return executor.Outcome{Detail: "already stopped"}, nil
	}
	var err error
	detail := "stopped in the simulated fleet"
	if requeue {
		err = e.fleet.RequeueFor(t.Job, grace, t.Finding)
		detail = "stopped and requeued in the simulated fleet"
		if grace > 0 {
			detail += " after " + grace.String()
		}
	} else {
		err = e.fleet.Stop(t.Job, schemas.StatusCancelled)
	}
	if errors.Is(err, fleetsim.ErrUnknownJob) {
		return executor.Outcome{}, fmt.Errorf("sim executor: stop %s: %w", t.Job, executor.ErrNotFound)
	}
	if err != nil {
		return executor.Outcome{}, fmt.Errorf("sim executor: %w", err)
	}
	e.done["job:"+t.Job] = true
	return executor.Outcome{Done: true, Detail: detail}, nil
}

// Resume lets a job the fleet holds for its gate (collector/sim.Gate) be
// placed, on the card the scheduler admitted it on: the scheduler admitted it
// (Service.SubmitSuspended). A job the fleet does not hold is running already,
// or is a requeued one the fleet resubmits itself: nothing to do.
func (e *Executor) Resume(_ context.Context, t executor.Target) (executor.Outcome, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.fleet.Holds(t.Job) {
		return executor.Outcome{Detail: "the simulated fleet resubmits requeued jobs itself"}, nil
	}
	if err := e.fleet.Admit(t.Job, t.Card); err != nil {
		return executor.Outcome{}, fmt.Errorf("sim executor: %w", err)
	}
	return executor.Outcome{Done: true, Detail: "admitted in the simulated fleet"}, nil
}

// Kill ends a leftover process (t.PID on t.Node) 1 ms from the fleet's current
// time.
func (e *Executor) Kill(_ context.Context, t executor.Target, _ time.Duration) (executor.Outcome, error) {
	if t.PID == 0 || t.Node == "" {
		return executor.Outcome{}, fmt.Errorf("sim executor: kill: %w (needs a node and a PID)", executor.ErrUnsupported)
	}
	key := "pid:" + t.Node + "/" + strconv.FormatUint(uint64(t.PID), 10)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.done[key] {
		return executor.Outcome{Detail: "already killed"}, nil
	}
	err := e.fleet.Kill(t.Node, t.PID)
	if errors.Is(err, fleetsim.ErrUnknownProcess) {
		return executor.Outcome{}, fmt.Errorf("sim executor: kill pid %d on %s: %w", t.PID, t.Node, executor.ErrNotFound)
	}
	if err != nil {
		return executor.Outcome{}, fmt.Errorf("sim executor: %w", err)
	}
	e.done[key] = true
	return executor.Outcome{Done: true, Detail: "killed in the simulated fleet"}, nil
}

var _ executor.Resolver = (*Executor)(nil)

// Owner is whose the target is in the simulated fleet: for a PID on a node, the
// leftover process's (its job's team and pool; a stray is nobody's, and resolved
// as such); else the running or held job's. A target the fleet does not have
// is ErrNotFound.
func (e *Executor) Owner(_ context.Context, t executor.Target) (executor.Owner, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if t.PID != 0 && t.Node != "" {
		o, ok := e.fleet.ProcessOwner(t.Node, t.PID)
		if !ok {
			return executor.Owner{}, fmt.Errorf("sim executor: owner of pid %d on %s: %w", t.PID, t.Node, executor.ErrNotFound)
		}
		detail := "leftover process of a job of team " + o.Team + " in the simulated fleet"
		if o.Team == "" {
			detail = "stray process of no job in the simulated fleet"
		}
		return executor.Owner{Team: o.Team, Pool: o.Pool, Detail: detail}, nil
	}
	o, ok := e.fleet.JobOwner(t.Job)
	if !ok {
		return executor.Owner{}, fmt.Errorf("sim executor: owner of %s: %w", t.Job, executor.ErrNotFound)
	}
	return executor.Owner{Team: o.Team, Pool: o.Pool, Detail: "job of team " + o.Team + " in the simulated fleet"}, nil
}
