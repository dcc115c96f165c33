package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/gpupool/gpupool/scheduler/executor"
)

// result is what one command did.
type result struct {
	cmd    string // the command line, with the program's base name
	stdout string
	stderr string
	v      verdict // what stderr says, whatever the exit status
	err    error   // nil when the command exited 0
}

// run runs one command within Config.Timeout.
func (e *Executor) run(ctx context.Context, bin string, args ...string) result {
	r := result{cmd: strings.Join(append([]string{filepath.Base(bin)}, args...), " ")}
	cctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, bin, args...)
	// A stand-in or wrapper that leaves a child holding stdout must not hold us past
	// the timeout.
	cmd.WaitDelay = time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r.stdout, r.stderr = stdout.String(), strings.TrimSpace(stderr.String())
	r.v = classify(r.stderr)
	switch {
	case err == nil:
	case ctx.Err() != nil:
		r.err = ctx.Err()
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		r.err = fmt.Errorf("%w after %s", ErrTimeout, e.cfg.Timeout)
	default:
		r.err = err
	}
	e.log.Debug("command", "cmd", r.cmd, "err", r.err, "stderr", r.stderr)
	return r
}

// error describes a failed command, wrapping the sentinel its message maps to.
func (r result) error() error {
	err := r.err
	if err == nil {
		err = errors.New("unexpected output")
	}
	msg := r.stderr
	if msg == "" {
		msg = "(no stderr)"
	}
	var kind error
	switch r.v {
	case vNotFound:
		kind = executor.ErrNotFound
	case vUnsupported:
		kind = executor.ErrUnsupported
	case vUnavailable:
		kind = ErrUnavailable
	}
	if kind != nil {
		return fmt.Errorf("%s: %w: %w: %s", r.cmd, kind, err, msg)
	}
	return fmt.Errorf("%s: %w: %s", r.cmd, err, msg)
}

// jobState is the state of a job's records in scontrol show job: one record, or one
// per task of an array job.
type jobState struct {
	states []string
	// held: every pending record has Priority=0 (scontrol hold, requeuehold).
	held bool
}

// Base job states (squeue's long names) that still hold, or are about to hold, an
// allocation; and those that wait for one.
var (
	activeStates  = []string{"RUNNING", "SUSPENDED", "CONFIGURING", "STOPPED", "RESIZING", "SIGNALING"}
	pendingStates = []string{"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD"}
)

func (s jobState) any(set []string) bool {
	return slices.ContainsFunc(s.states, func(st string) bool { return slices.Contains(set, st) })
}

func (s jobState) running() bool { return s.any(activeStates) }
func (s jobState) pending() bool { return !s.running() && s.any(pendingStates) }

// completing: no record runs, and one is COMPLETING, the state scontrol shows
// while a cancelled, ended or requeued job's processes and epilog end (a
// requeued one is PENDING after). It still holds its nodes.
func (s jobState) completing() bool { return !s.running() && slices.Contains(s.states, "COMPLETING") }

func (s jobState) String() string {
	u := slices.Clone(s.states)
	slices.Sort(u)
	return strings.Join(slices.Compact(u), ",")
}

var (
	stateField    = regexp.MustCompile(`(?:^|\s)JobState=([A-Z_]+)`)
	priorityField = regexp.MustCompile(`(?:^|\s)Priority=([0-9]+)`)
)

// parseShowJob reads scontrol --oneliner show job output: one line per record.
func parseShowJob(out string) (jobState, error) {
	st := jobState{held: true}
	pendingSeen := false
	for line := range strings.Lines(out) {
		m := stateField.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		st.states = append(st.states, m[1])
		if slices.Contains(pendingStates, m[1]) {
			pendingSeen = true
			if p := priorityField.FindStringSubmatch(line); p == nil || p[1] != "0" {
				st.held = false
			}
		}
	}
	if len(st.states) == 0 {
		return jobState{}, fmt.Errorf("no JobState= in scontrol show job output %q", truncate(out, 200))
	}
	st.held = st.held && pendingSeen
	return st, nil
}

// state reads the job's state with scontrol --oneliner show job.
func (e *Executor) state(ctx context.Context, id string) (jobState, error) {
	r := e.run(ctx, e.cfg.Scontrol, "--oneliner", "show", "job", id)
	if r.err != nil {
		return jobState{}, r.error()
	}
	st, err := parseShowJob(r.stdout)
	if err != nil {
		return st, fmt.Errorf("%s: %w", r.cmd, err)
	}
	return st, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
