package slurm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/gpupool/gpupool/scheduler/executor"
	"github.com/gpupool/gpupool/schemas"
)

var _ executor.Executor = (*Executor)(nil)

// Executor acts on Slurm jobs through scontrol and scancel. It is safe for
// concurrent use.
type Executor struct {
	cfg executor.SlurmConfig
	log *slog.Logger
	// wait waits out the grace period between scancel --signal=TERM and scancel;
	// tests replace it.
	wait func(ctx context.Context, d time.Duration) error
}

// Option configures New.
type Option func(*Executor)

// WithLogger sets the logger.
func WithLogger(log *slog.Logger) Option {
	return func(e *Executor) { e.log = log }
}

// New returns an executor; it runs nothing until asked.
func New(cfg executor.SlurmConfig, opts ...Option) (*Executor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("slurm executor: %w", err)
	}
	e := &Executor{cfg: cfg, log: slog.New(slog.DiscardHandler), wait: sleepCtx}
	for _, o := range opts {
		o(e)
	}
	e.log = e.log.With("component", "executor", "executor", "slurm")
	return e, nil
}

// Name returns "slurm".
func (e *Executor) Name() string { return "slurm" }

// jobIDPattern is a job ID, an array task ("42_7") or a heterogeneous job component
// ("42+1"); anything else could be taken by scontrol for an option.
var jobIDPattern = regexp.MustCompile(`^[0-9]+([_+][0-9]+)?$`)

// jobID returns the target's Slurm job ID, from SlurmJobID or the job key
// "slurm/<cluster>/<id>".
func (e *Executor) jobID(t executor.Target) (string, error) {
	if t.Source != "" && t.Source != schemas.SourceSlurm {
		return "", fmt.Errorf("%w: source %q is not slurm", executor.ErrUnsupported, t.Source)
	}
	id, cluster := t.SlurmJobID, t.Cluster
	if rest, ok := strings.CutPrefix(t.Job, "slurm/"); ok {
		if i := strings.LastIndexByte(rest, '/'); i >= 0 {
			cluster = cmpOr(cluster, rest[:i])
			id = cmpOr(id, rest[i+1:])
		}
	}
	switch {
	case id == "":
		return "", fmt.Errorf("%w: no Slurm job ID (SlurmJobID or a slurm/<cluster>/<id> job key)", executor.ErrUnsupported)
	case !jobIDPattern.MatchString(id):
		return "", fmt.Errorf("%w: %q is not a Slurm job ID", executor.ErrUnsupported, id)
	case e.cfg.Cluster != "" && cluster != "" && cluster != e.cfg.Cluster:
		return "", fmt.Errorf("%w: job of cluster %q, this executor acts on %q", executor.ErrUnsupported, cluster, e.cfg.Cluster)
	}
	return id, nil
}

// describe names a target in errors.
func describe(t executor.Target) string {
	if t.Job != "" {
		return t.Job
	}
	return "Slurm job " + t.SlurmJobID
}

// Stop requeues the job (scontrol requeue, or requeuehold with SlurmConfig.RequeueHold) or
// cancels it (scancel, after a SIGTERM and grace when grace > 0).
func (e *Executor) Stop(ctx context.Context, t executor.Target, requeue bool, grace time.Duration) (executor.Outcome, error) {
	out, err := e.stop(ctx, t, requeue, grace)
	if err != nil {
		return out, fmt.Errorf("slurm: stop %s: %w", describe(t), err)
	}
	e.log.Info("stop", "job", t.Job, "requeue", requeue, "done", out.Done, "detail", out.Detail)
	return out, nil
}

func (e *Executor) stop(ctx context.Context, t executor.Target, requeue bool, grace time.Duration) (executor.Outcome, error) {
	id, err := e.jobID(t)
	if err != nil {
		return executor.Outcome{}, err
	}
	st, err := e.state(ctx, id)
	if err != nil {
		return executor.Outcome{}, err
	}
	if requeue {
		return e.requeue(ctx, id, st)
	}
	return e.cancel(ctx, id, st, grace)
}

func (e *Executor) requeue(ctx context.Context, id string, st jobState) (executor.Outcome, error) {
	switch {
	case st.pending():
		return executor.Outcome{Detail: fmt.Sprintf("job %s already pending (%s)", id, st)}, nil
	case st.completing():
		return executor.Outcome{Detail: fmt.Sprintf("job %s completing: leaving its nodes, ended or already requeued (%s)", id, st)}, nil
	case !st.running():
		return executor.Outcome{Detail: fmt.Sprintf("job %s already ended (%s)", id, st)}, nil
	}
	verb := "requeue"
	if e.cfg.RequeueHold {
		verb = "requeuehold"
	}
	r := e.run(ctx, e.cfg.Scontrol, verb, "Incomplete", id)
	if r.err != nil {
		if r.v == vPending || r.v == vDone {
			return executor.Outcome{Detail: r.cmd + ": " + r.stderr}, nil
		}
		return executor.Outcome{}, r.error()
	}
	return executor.Outcome{Done: true, Detail: r.cmd}, nil
}

func (e *Executor) cancel(ctx context.Context, id string, st jobState, grace time.Duration) (executor.Outcome, error) {
	// A COMPLETING job is cancelled too: one being requeued would be pending again.
	if !st.running() && !st.pending() && !st.completing() {
		return executor.Outcome{Detail: fmt.Sprintf("job %s already ended (%s)", id, st)}, nil
	}
	var done []string
	if grace > 0 && st.running() {
		r := e.run(ctx, e.cfg.Scancel, "--signal=TERM", "--full", id)
		switch {
		case r.v == vDone || r.v == vNotFound:
			return executor.Outcome{Detail: r.cmd + ": " + r.stderr}, nil
		case r.err != nil:
			return executor.Outcome{}, r.error()
		}
		done = append(done, r.cmd)
		if err := e.wait(ctx, grace); err != nil {
			return executor.Outcome{}, fmt.Errorf("%s, then waiting %s for the job to exit: %w", r.cmd, grace, err)
		}
	}
	r := e.run(ctx, e.cfg.Scancel, id)
	switch {
	case r.err != nil:
		return executor.Outcome{}, r.error()
	case (r.v == vDone || r.v == vNotFound) && len(done) == 0:
		return executor.Outcome{Detail: r.cmd + ": " + r.stderr}, nil
	}
	done = append(done, r.cmd)
	return executor.Outcome{Done: true, Detail: strings.Join(done, "; ")}, nil
}

// Resume releases a held pending job (scontrol release); with a placement,
// its required node list is set to the placement's nodes first (scontrol
// update JobId=<id> ReqNodeList=<nodes>).
func (e *Executor) Resume(ctx context.Context, t executor.Target) (executor.Outcome, error) {
	out, err := e.resume(ctx, t)
	if err != nil {
		return out, fmt.Errorf("slurm: resume %s: %w", describe(t), err)
	}
	e.log.Info("resume", "job", t.Job, "done", out.Done, "detail", out.Detail)
	return out, nil
}

func (e *Executor) resume(ctx context.Context, t executor.Target) (executor.Outcome, error) {
	id, err := e.jobID(t)
	if err != nil {
		return executor.Outcome{}, err
	}
	st, err := e.state(ctx, id)
	if err != nil {
		return executor.Outcome{}, err
	}
	switch {
	case st.running():
		return executor.Outcome{Detail: fmt.Sprintf("job %s already running (%s)", id, st)}, nil
	case st.completing():
		// Right after a requeuehold: pending and held once its epilog ends.
		return executor.Outcome{}, fmt.Errorf("%w: job %s is %s; try again when it is pending", ErrCompleting, id, st)
	case !st.pending():
		return executor.Outcome{Detail: fmt.Sprintf("job %s already ended (%s)", id, st)}, nil
	case !st.held:
		return executor.Outcome{Detail: fmt.Sprintf("job %s pending and not held", id)}, nil
	}
	var done []string
	if nodes := t.Nodes(); len(nodes) > 0 {
		// The pending job's required node list (sbatch --nodelist): it starts on
		// the nodes the scheduler placed it on, or not at all. Set before the
		// release, so that it cannot start elsewhere in between; a fraction's
		// GRES in the same update.
		args := []string{"update", "JobId=" + id, "ReqNodeList=" + strings.Join(nodes, ",")}
		if tres := e.shareTRES(t); tres != "" {
			args = append(args, "TresPerNode="+tres)
		}
		u := e.run(ctx, e.cfg.Scontrol, args...)
		switch {
		case u.err != nil && (u.v == vNotPending || u.v == vDone):
			return executor.Outcome{Detail: u.cmd + ": " + u.stderr}, nil
		case u.err != nil:
			return executor.Outcome{}, u.error()
		}
		done = append(done, u.cmd)
	}
	r := e.run(ctx, e.cfg.Scontrol, "release", id)
	if r.err != nil {
		if r.v == vNotPending || r.v == vDone {
			return executor.Outcome{Detail: strings.Join(append(done, r.cmd+": "+r.stderr), "; ")}, nil
		}
		return executor.Outcome{}, r.error()
	}
	return executor.Outcome{Done: true, Detail: strings.Join(append(done, r.cmd), "; ")}, nil
}

// Kill returns ErrUnsupported: processes are the node agent's.
func (e *Executor) Kill(_ context.Context, t executor.Target, _ time.Duration) (executor.Outcome, error) {
	return executor.Outcome{}, fmt.Errorf("slurm: kill PID %d of %s: %w (processes are the node agent's)", t.PID, describe(t), executor.ErrUnsupported)
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

var _ executor.Checker = (*Executor)(nil)

// Check reads the job's state (scontrol show job): a job Slurm no longer knows,
// or whose records have all ended, is gone.
func (e *Executor) Check(ctx context.Context, t executor.Target) (executor.Presence, error) {
	id, err := e.jobID(t)
	if err != nil {
		return executor.Presence{}, fmt.Errorf("slurm: check %s: %w", describe(t), err)
	}
	st, err := e.state(ctx, id)
	switch {
	case errors.Is(err, executor.ErrNotFound):
		return executor.Presence{Gone: true, Detail: fmt.Sprintf("Slurm no longer knows job %s", id)}, nil
	case err != nil:
		return executor.Presence{}, fmt.Errorf("slurm: check %s: %w", describe(t), err)
	case !st.running() && !st.pending() && !st.completing():
		return executor.Presence{Gone: true, Detail: fmt.Sprintf("job %s ended (%s)", id, st)}, nil
	}
	return executor.Presence{Detail: fmt.Sprintf("job %s is %s", id, st)}, nil
}

// shareTRES is the GRES a job placed on a fraction of a GPU asks on its node:
// gres/shard (timeslice) or gres/mps (mps) of ⌈fraction × the GPU's count /
// 1000⌉, at least 1; "" for a job of whole GPUs, or a mode whose count per
// GPU is not configured.
func (e *Executor) shareTRES(t executor.Target) string {
	sh, ok := t.Share()
	if !ok {
		return ""
	}
	name, per := "shard", e.cfg.ShardsPerGPU
	if sh.Mode == "mps" {
		name, per = "mps", e.cfg.MPSPerGPU
	}
	if per <= 0 {
		return ""
	}
	return fmt.Sprintf("gres/%s:%d", name, max(1, (sh.Fraction*per+999)/1000))
}
