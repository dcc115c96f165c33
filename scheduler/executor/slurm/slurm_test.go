package slurm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/scheduler/executor"
)

// reply is what a stand-in command does for one argument list.
type reply struct {
	stdout, stderr string
	code           int
	// shell, when set, replaces the reply (e.g. "exec sleep 5").
	shell string
}

// standIns writes scontrol and scancel stand-ins into a temporary directory put first
// on PATH. Each appends its name and arguments, separated by "|", to a log and
// answers with the reply for its exact arguments (exit 0, silent, if none). It
// returns a function reading the log.
func standIns(t *testing.T, replies map[string]reply) func() []string {
	t.Helper()
	dir := t.TempDir()
	log := filepath.Join(dir, "calls.log")
	for _, name := range []string{"scontrol", "scancel"} {
		var b strings.Builder
		fmt.Fprintf(&b, "#!/bin/sh\n{ printf '%%s' %s; for a in \"$@\"; do printf '|%%s' \"$a\"; done; echo; } >> '%s'\n", name, log)
		b.WriteString("case \"$*\" in\n")
		for args, r := range replies {
			cmd, rest, _ := strings.Cut(args, " ")
			if cmd != name {
				continue
			}
			fmt.Fprintf(&b, "'%s')\n", rest)
			if r.shell != "" {
				fmt.Fprintf(&b, "  %s\n", r.shell)
			}
			fmt.Fprintf(&b, "  printf '%%s' '%s'\n  printf '%%s\\n' '%s' >&2\n  exit %d;;\n", r.stdout, r.stderr, r.code)
		}
		b.WriteString("esac\nexit 0\n")
		if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return func() []string {
		data, err := os.ReadFile(log)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSpace(string(data)), "\n")
	}
}

const (
	show       = "scontrol --oneliner show job 42"
	showCall   = "scontrol|--oneliner|show|job|42"
	running    = "JobId=42 JobName=train UserId=ana(1000) Priority=4294 JobState=RUNNING Reason=None Dependency=(null)\n"
	pending    = "JobId=42 JobName=train Priority=4294 JobState=PENDING Reason=Priority\n"
	held       = "JobId=42 JobName=train Priority=0 JobState=PENDING Reason=JobHeldAdmin\n"
	completed  = "JobId=42 JobName=train Priority=4294 JobState=COMPLETED Reason=None\n"
	invalidJob = "slurm_load_jobs error: Invalid job id specified"
)

type op int

const (
	opRequeue op = iota
	opCancel
	opResume
)

// TestExecutor drives the executor with stand-in scontrol and scancel: the
// command lines it runs in each case, and the answers a real one-node cluster
// cannot be made to give on demand (a job that ends or is requeued between the
// state read and the action, a controller that answers slowly or is busy, a
// failing scancel). TestLive (live_test.go) runs every action against real Slurm.
func TestExecutor(t *testing.T) {
	target := executor.Target{Job: "slurm/c1/42", Source: "slurm", Cluster: "c1"}
	for _, tc := range []struct {
		name      string
		hold      bool
		op        op
		grace     time.Duration
		target    *executor.Target
		replies   map[string]reply
		wantDone  bool
		wantErr   error
		wantCalls []string
		wantWaits []time.Duration
	}{
		{
			name:      "requeue a running job",
			replies:   map[string]reply{show: {stdout: running}},
			wantDone:  true,
			wantCalls: []string{showCall, "scontrol|requeue|Incomplete|42"},
		},
		{
			name:      "requeue with hold",
			hold:      true,
			replies:   map[string]reply{show: {stdout: running}},
			wantDone:  true,
			wantCalls: []string{showCall, "scontrol|requeuehold|Incomplete|42"},
		},
		{
			name:      "requeue by SlurmJobID alone",
			target:    &executor.Target{SlurmJobID: "42"},
			replies:   map[string]reply{show: {stdout: running}},
			wantDone:  true,
			wantCalls: []string{showCall, "scontrol|requeue|Incomplete|42"},
		},
		{
			name:      "already requeued: nothing run",
			replies:   map[string]reply{show: {stdout: pending}},
			wantCalls: []string{showCall},
		},
		{
			name:      "completed: never requeued",
			replies:   map[string]reply{show: {stdout: completed}},
			wantCalls: []string{showCall},
		},
		{
			name: "requeued meanwhile: Slurm says pending",
			replies: map[string]reply{
				show:                             {stdout: running},
				"scontrol requeue Incomplete 42": {stderr: "Job is pending execution for job 42", code: 1},
			},
			wantCalls: []string{showCall, "scontrol|requeue|Incomplete|42"},
		},
		{
			name: "requeue disabled for the job",
			replies: map[string]reply{
				show:                             {stdout: running},
				"scontrol requeue Incomplete 42": {stderr: "Requested operation is presently disabled for job 42", code: 1},
			},
			wantErr:   executor.ErrUnsupported,
			wantCalls: []string{showCall, "scontrol|requeue|Incomplete|42"},
		},
		{
			name:      "unknown job: not found",
			replies:   map[string]reply{show: {stderr: invalidJob, code: 1}},
			wantErr:   executor.ErrNotFound,
			wantCalls: []string{showCall},
		},
		{
			name:      "controller down: retryable",
			replies:   map[string]reply{show: {stderr: "slurm_load_jobs error: Unable to contact slurm controller (connect failure)", code: 1}},
			wantErr:   ErrUnavailable,
			wantCalls: []string{showCall},
		},
		{
			name:      "cancel with grace: TERM, wait, scancel",
			op:        opCancel,
			grace:     90 * time.Second,
			replies:   map[string]reply{show: {stdout: running}},
			wantDone:  true,
			wantCalls: []string{showCall, "scancel|--signal=TERM|--full|42", "scancel|42"},
			wantWaits: []time.Duration{90 * time.Second},
		},
		{
			name:      "cancel without grace",
			op:        opCancel,
			replies:   map[string]reply{show: {stdout: running}},
			wantDone:  true,
			wantCalls: []string{showCall, "scancel|42"},
		},
		{
			name:      "cancel a pending job: no TERM",
			op:        opCancel,
			grace:     time.Minute,
			replies:   map[string]reply{show: {stdout: held}},
			wantDone:  true,
			wantCalls: []string{showCall, "scancel|42"},
		},
		{
			name:      "cancel a completed job",
			op:        opCancel,
			grace:     time.Minute,
			replies:   map[string]reply{show: {stdout: completed}},
			wantCalls: []string{showCall},
		},
		{
			name:  "cancel: job ended before the TERM",
			op:    opCancel,
			grace: time.Minute,
			replies: map[string]reply{
				show:                              {stdout: running},
				"scancel --signal=TERM --full 42": {stderr: "scancel: error: Kill job error on job id 42: Job/step already completing or completed"},
			},
			wantCalls: []string{showCall, "scancel|--signal=TERM|--full|42"},
		},
		{
			name: "scancel fails",
			op:   opCancel,
			replies: map[string]reply{
				show:         {stdout: running},
				"scancel 42": {stderr: "scancel: error: Access/permission denied", code: 1},
			},
			wantErr:   errExit,
			wantCalls: []string{showCall, "scancel|42"},
		},
		{
			name:      "resume a held job",
			op:        opResume,
			replies:   map[string]reply{show: {stdout: held}},
			wantDone:  true,
			wantCalls: []string{showCall, "scontrol|release|42"},
		},
		{
			name:      "resume a held job on its placement: required node list, then release",
			op:        opResume,
			target:    &placedTarget,
			replies:   map[string]reply{show: {stdout: held}},
			wantDone:  true,
			wantCalls: []string{showCall, "scontrol|update|JobId=42|ReqNodeList=h0,h1", "scontrol|release|42"},
		},
		{
			name:      "resume an MPS fraction: its node and gres/mps of 250/1000 × 100, then release",
			op:        opResume,
			target:    sharedTarget("mps"),
			replies:   map[string]reply{show: {stdout: held}},
			wantDone:  true,
			wantCalls: []string{showCall, "scontrol|update|JobId=42|ReqNodeList=h0|TresPerNode=gres/mps:25", "scontrol|release|42"},
		},
		{
			name:      "resume a time-sliced fraction with no shards configured: its node only",
			op:        opResume,
			target:    sharedTarget("timeslice"),
			replies:   map[string]reply{show: {stdout: held}},
			wantDone:  true,
			wantCalls: []string{showCall, "scontrol|update|JobId=42|ReqNodeList=h0", "scontrol|release|42"},
		},
		{
			name:   "the node list refused: not released, so it cannot start elsewhere",
			op:     opResume,
			target: &placedTarget,
			replies: map[string]reply{
				show: {stdout: held},
				"scontrol update JobId=42 ReqNodeList=h0,h1": {stderr: "slurm_update error: Invalid node name specified", code: 1},
			},
			wantErr:   errInvalidNode,
			wantCalls: []string{showCall, "scontrol|update|JobId=42|ReqNodeList=h0,h1"},
		},
		{
			name:      "resume a pending job that is not held",
			op:        opResume,
			replies:   map[string]reply{show: {stdout: pending}},
			wantCalls: []string{showCall},
		},
		{
			name:      "resume a running job",
			op:        opResume,
			replies:   map[string]reply{show: {stdout: running}},
			wantCalls: []string{showCall},
		},
		{
			name:    "another cluster's job",
			target:  &executor.Target{Job: "slurm/c2/42"},
			wantErr: executor.ErrUnsupported,
		},
		{
			name:    "not a job id",
			target:  &executor.Target{SlurmJobID: "--help"},
			wantErr: executor.ErrUnsupported,
		},
		{
			name:    "a Kubernetes job",
			target:  &executor.Target{Job: "k8s/ns/uid", Source: "kubernetes"},
			wantErr: executor.ErrUnsupported,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := standIns(t, tc.replies)
			cfg := executor.DefaultSlurmConfig()
			cfg.Cluster, cfg.RequeueHold = "c1", tc.hold
			e, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			var waits []time.Duration
			e.wait = func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }
			tg := target
			if tc.target != nil {
				tg = *tc.target
			}
			var out executor.Outcome
			switch tc.op {
			case opRequeue:
				out, err = e.Stop(t.Context(), tg, true, tc.grace)
			case opCancel:
				out, err = e.Stop(t.Context(), tg, false, tc.grace)
			case opResume:
				out, err = e.Resume(t.Context(), tg)
			}
			switch {
			case tc.wantErr == errExit:
				var ee interface{ ExitCode() int }
				if !errors.As(err, &ee) || !strings.Contains(err.Error(), "permission denied") {
					t.Fatalf("err = %v, want the exit status and stderr", err)
				}
			case tc.wantErr == errInvalidNode:
				if err == nil || !strings.Contains(err.Error(), "Invalid node name") || !strings.Contains(err.Error(), "ReqNodeList=h0,h1") {
					t.Fatalf("err = %v, want the update's command and stderr", err)
				}
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
			case err != nil:
				t.Fatalf("err = %v", err)
			}
			if out.Done != tc.wantDone {
				t.Errorf("Done = %t, want %t (%s)", out.Done, tc.wantDone, out.Detail)
			}
			if got := calls(); !slices.Equal(got, tc.wantCalls) {
				t.Errorf("calls:\n got %q\nwant %q", got, tc.wantCalls)
			}
			if !slices.Equal(waits, tc.wantWaits) {
				t.Errorf("waits %v, want %v", waits, tc.wantWaits)
			}
		})
	}
}

// errExit marks a case that expects the command's own exit error;
// errInvalidNode one that expects the failed update's.
var (
	errExit        = errors.New("exit status")
	errInvalidNode = errors.New("invalid node")
)

// sharedTarget is a job placed on a 250/1000 share of GPU 1 of node h0.
func sharedTarget(mode string) *executor.Target {
	return &executor.Target{Job: "slurm/c1/42", Source: "slurm", Cluster: "c1", Placement: []executor.NodeGPUs{
		{Node: "h0", Shares: []executor.GPUShare{{GPU: 1, Fraction: 250, Mode: mode, MemMiB: 20480}}},
	}}
}

// placedTarget is the test's job placed on two nodes.
var placedTarget = executor.Target{Job: "slurm/c1/42", Source: "slurm", Cluster: "c1", Placement: []executor.NodeGPUs{
	{Node: "h0", GPUs: []int{0, 1, 2, 3}}, {Node: "h1", GPUs: []int{2, 3}},
}}

// TestTimeout: a stand-in that hangs, as a slow controller does (a real one
// that is down is TestLive's "controller down").
func TestTimeout(t *testing.T) {
	calls := standIns(t, map[string]reply{show: {shell: "exec sleep 5"}})
	cfg := executor.DefaultSlurmConfig()
	cfg.Timeout = 100 * time.Millisecond
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = e.Stop(t.Context(), executor.Target{SlurmJobID: "42"}, true, 0)
	if !errors.Is(err, ErrTimeout) || !IsRetryable(err) || !strings.Contains(err.Error(), "42") {
		t.Fatalf("err = %v, want a retryable timeout naming the job", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("took %s: the timeout did not stop the command", d)
	}
	if got := calls(); !slices.Equal(got, []string{showCall}) {
		t.Errorf("calls %q", got)
	}
}

func TestConfiguredPaths(t *testing.T) {
	standIns(t, map[string]reply{show: {stdout: running}})
	dir := filepath.Dir(lookPath(t, "scontrol"))
	t.Setenv("PATH", "/nonexistent")
	cfg := executor.DefaultSlurmConfig()
	cfg.Scontrol, cfg.Scancel = filepath.Join(dir, "scontrol"), filepath.Join(dir, "scancel")
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.Stop(t.Context(), executor.Target{SlurmJobID: "42"}, false, 0)
	if err != nil || !out.Done || out.Detail != "scancel 42" {
		t.Fatalf("Stop = %+v, %v", out, err)
	}
	cfg.Scontrol = filepath.Join(dir, "missing")
	e, _ = New(cfg)
	if _, err := e.Resume(t.Context(), executor.Target{SlurmJobID: "42"}); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("err = %v, want the missing binary named", err)
	}
}

func lookPath(t *testing.T, name string) string {
	t.Helper()
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if p := filepath.Join(d, name); fileExists(p) {
			return p
		}
	}
	t.Fatalf("%s not on PATH", name)
	return ""
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

func TestKillUnsupported(t *testing.T) {
	e, err := New(executor.DefaultSlurmConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Kill(t.Context(), executor.Target{SlurmJobID: "42", PID: 7}, 0); !errors.Is(err, executor.ErrUnsupported) {
		t.Fatalf("err = %v", err)
	}
	if e.Name() != "slurm" {
		t.Errorf("Name = %q", e.Name())
	}
}

func TestParseShowJob(t *testing.T) {
	for _, tc := range []struct {
		name             string
		out              string
		running, pending bool
		held, completing bool
		wantErr          bool
	}{
		{name: "running", out: running, running: true},
		{name: "pending", out: pending, pending: true},
		{name: "held", out: held, pending: true, held: true},
		{name: "completed", out: completed},
		{name: "array: one task running", out: held + running, running: true, held: true},
		{name: "array: all held", out: held + held, pending: true, held: true},
		{name: "array: one held one not", out: held + pending, pending: true},
		{name: "completing", out: "JobId=42 JobState=COMPLETING Reason=None\n", completing: true},
		{name: "array: one task completing, one running", out: "JobId=42 JobState=COMPLETING Reason=None\n" + running, running: true},
		{name: "no state", out: "garbage\n", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := parseShowJob(tc.out)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			if st.running() != tc.running || st.pending() != tc.pending || st.held != tc.held || st.completing() != tc.completing {
				t.Errorf("running %t pending %t held %t completing %t", st.running(), st.pending(), st.held, st.completing())
			}
		})
	}
}

func FuzzParseShowJob(f *testing.F) {
	for _, s := range []string{running, pending, held, completed, held + running, "", "JobState="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, out string) {
		st, err := parseShowJob(out)
		if err == nil && len(st.states) == 0 {
			t.Fatal("no error and no state")
		}
		if st.running() && st.pending() {
			t.Fatal("both running and pending")
		}
	})
}

// TestShareTRES: a fraction asks ⌈fraction × count / 1000⌉ (at least 1) of
// its mode's GRES; whole GPUs, or a mode with no count configured, nothing.
func TestShareTRES(t *testing.T) {
	cfg := executor.DefaultSlurmConfig()
	cfg.ShardsPerGPU = 8
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	one := func(f int, mode string) executor.Target {
		tg := *sharedTarget(mode)
		tg.Placement = []executor.NodeGPUs{{Node: "h0", Shares: []executor.GPUShare{{GPU: 0, Fraction: f, Mode: mode}}}}
		return tg
	}
	for _, c := range []struct {
		t    executor.Target
		want string
	}{
		{one(250, "timeslice"), "gres/shard:2"},
		{one(300, "timeslice"), "gres/shard:3"},
		{one(1, "timeslice"), "gres/shard:1"},
		{one(999, "mps"), "gres/mps:100"},
		{one(1, "mps"), "gres/mps:1"},
		{placedTarget, ""},
	} {
		if got := e.shareTRES(c.t); got != c.want {
			t.Errorf("%+v: %q, want %q", c.t.Placement, got, c.want)
		}
	}
	cfg.ShardsPerGPU, cfg.MPSPerGPU = -1, 0
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "shards_per_gpu") {
		t.Errorf("a negative shard count: %v", err)
	}
}
