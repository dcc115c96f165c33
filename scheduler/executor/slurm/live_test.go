package slurm

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/scheduler/executor"
	testslurm "github.com/gpupool/gpupool/testservers/slurm"
)

// TestLive runs every action of the executor against a real one-node Slurm
// cluster (testservers/slurm: slurmctld and slurmd 22.05), and checks
// the answers of real scontrol and scancel that the executor relies on. The
// stand-in tests in slurm_test.go remain for what this cluster cannot show (a
// node failure, a slow controller).
func TestLive(t *testing.T) {
	gates := t.TempDir()
	// The epilog keeps a job COMPLETING while gates/hold-<job id> exists, so the
	// window between a requeue and the job's return to PENDING can be tested.
	epilog := "#!/bin/sh\ni=0\nwhile [ -e '" + gates + "/hold-'\"$SLURM_JOB_ID\" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done\nexit 0\n"
	c := testslurm.Start(t, testslurm.Options{Epilog: map[string]string{"gate.sh": epilog}})
	gate := func(t *testing.T, id string) (open func()) {
		p := filepath.Join(gates, "hold-"+id)
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		open = func() { _ = os.Remove(p) }
		t.Cleanup(open)
		return open
	}
	newExec := func(t *testing.T, edit func(*executor.SlurmConfig)) *Executor {
		cfg := executor.DefaultSlurmConfig()
		cfg.Scontrol, cfg.Scancel, cfg.Cluster, cfg.Timeout = c.Bin("scontrol"), c.Bin("scancel"), c.Name, 20*time.Second
		if edit != nil {
			edit(&cfg)
		}
		e, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	target := func(id string) executor.Target {
		return executor.Target{Job: "slurm/" + c.Name + "/" + id, Source: "slurm"}
	}
	// running submits a one-GPU batch job and waits until it runs; it is
	// cancelled when the subtest ends.
	running := func(t *testing.T, args ...string) string {
		c := c.T(t)
		id := c.Submit(append(args, "--gres=gpu:a100:1", "--wrap", "sleep 600")...)
		t.Cleanup(func() { _ = c.Cmd(context.Background(), "scancel", id).Run() })
		c.WaitState(id, "RUNNING")
		return id
	}
	// raw runs a real command and returns its exit status, stdout and stderr.
	raw := func(t *testing.T, name string, args ...string) (int, string, string) {
		cmd := c.Cmd(t.Context(), name, args...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), stdout.String(), strings.TrimSpace(stderr.String())
	}

	t.Run("requeue", func(t *testing.T) {
		c := c.T(t)
		e := newExec(t, nil)
		id := running(t)
		open := gate(t, id)
		out, err := e.Stop(t.Context(), target(id), true, 0)
		if err != nil || !out.Done || out.Detail != "scontrol requeue Incomplete "+id {
			t.Fatalf("Stop(requeue) = %+v, %v; want done by scontrol requeue", out, err)
		}
		// COMPLETING until the epilog ends: the job still holds its node and
		// will be pending again, so it is neither gone nor requeued twice.
		if st := c.Field(id, "JobState"); st != "COMPLETING" {
			t.Fatalf("JobState %s while the epilog runs, want COMPLETING", st)
		}
		if p, err := e.Check(t.Context(), target(id)); err != nil || p.Gone {
			t.Errorf("Check while completing = %+v, %v; want present", p, err)
		}
		if out, err := e.Stop(t.Context(), target(id), true, 0); err != nil || out.Done {
			t.Errorf("second Stop(requeue) while completing = %+v, %v; want not done, no error", out, err)
		}
		open()
		c.WaitState(id, "PENDING")
		// Real Slurm: a requeued job may not start for about two minutes.
		if r := c.Field(id, "Reason"); r != "BeginTime" {
			t.Errorf("requeued job's Reason %s, want BeginTime", r)
		}
		if n := c.Field(id, "Restarts"); n != "1" {
			t.Errorf("Restarts=%s, want 1", n)
		}
		if out, err := e.Stop(t.Context(), target(id), true, 0); err != nil || out.Done || !strings.Contains(out.Detail, "already pending") {
			t.Errorf("Stop(requeue) of the pending job = %+v, %v; want already pending", out, err)
		}
		// Real scontrol requeues a pending job silently, exit 0: only the state
		// read first tells the executor there was nothing to do.
		if code, stdout, stderr := raw(t, "scontrol", "requeue", "Incomplete", id); code != 0 || stdout != "" || stderr != "" {
			t.Errorf("scontrol requeue of a pending job: exit %d, %q, %q; want 0 and silence", code, stdout, stderr)
		}
		// Not run again here: a requeued job started within seconds (scontrol
		// update StartTime=now) may be killed by its node ("Job credential
		// revoked") and fail, which is why slurmctld makes it wait.
	})

	t.Run("requeuehold, then release onto the placed node", func(t *testing.T) {
		c := c.T(t)
		e := newExec(t, func(cfg *executor.SlurmConfig) { cfg.RequeueHold = true })
		id := running(t)
		open := gate(t, id)
		out, err := e.Stop(t.Context(), target(id), true, 0)
		if err != nil || !out.Done || out.Detail != "scontrol requeuehold Incomplete "+id {
			t.Fatalf("Stop(requeue) = %+v, %v; want done by scontrol requeuehold", out, err)
		}
		placed := target(id)
		placed.Placement = []executor.NodeGPUs{{Node: c.Node, GPUs: []int{2}}}
		// Still completing: a release now is retried later, not reported done
		// or ended.
		if _, err := e.Resume(t.Context(), placed); !errors.Is(err, ErrCompleting) || !IsRetryable(err) {
			t.Errorf("Resume while completing: %v; want retryable ErrCompleting", err)
		}
		open()
		c.WaitState(id, "PENDING")
		if p := c.Field(id, "Priority"); p != "0" {
			t.Fatalf("requeueheld job's Priority=%s, want 0 (held)", p)
		}
		// An unknown node: Slurm refuses the update and the job stays held.
		bad := target(id)
		bad.Placement = []executor.NodeGPUs{{Node: "no-such-node"}}
		if _, err := e.Resume(t.Context(), bad); err == nil || !strings.Contains(err.Error(), "Invalid node name specified") {
			t.Errorf("Resume onto an unknown node: %v; want scontrol's refusal", err)
		}
		if p := c.Field(id, "Priority"); p != "0" {
			t.Errorf("after a refused node list Priority=%s, want 0: still held", p)
		}
		out, err = e.Resume(t.Context(), placed)
		want := "scontrol update JobId=" + id + " ReqNodeList=" + c.Node + "; scontrol release " + id
		if err != nil || !out.Done || out.Detail != want {
			t.Fatalf("Resume = %+v, %v; want done by %q", out, err, want)
		}
		if n := c.Field(id, "ReqNodeList"); n != c.Node {
			t.Errorf("ReqNodeList=%s, want %s", n, c.Node)
		}
		if p := c.Field(id, "Priority"); p == "0" {
			t.Errorf("released job still has Priority=0")
		}
		if out, err := e.Resume(t.Context(), placed); err != nil || out.Done || !strings.Contains(out.Detail, "not held") {
			t.Errorf("second Resume = %+v, %v; want pending and not held", out, err)
		}
	})

	t.Run("release a job submitted held onto the placed node", func(t *testing.T) {
		c := c.T(t)
		e := newExec(t, nil)
		id := c.Submit("--hold", "--gres=gpu:a100:1", "--wrap", "sleep 600")
		t.Cleanup(func() { _ = c.Cmd(context.Background(), "scancel", id).Run() })
		placed := target(id)
		placed.Placement = []executor.NodeGPUs{{Node: c.Node, GPUs: []int{0}}}
		out, err := e.Resume(t.Context(), placed)
		want := "scontrol update JobId=" + id + " ReqNodeList=" + c.Node + "; scontrol release " + id
		if err != nil || !out.Done || out.Detail != want {
			t.Fatalf("Resume = %+v, %v; want done by %q", out, err, want)
		}
		c.WaitState(id, "RUNNING")
		if n := c.Field(id, "NodeList"); n != c.Node {
			t.Errorf("runs on %s, want %s", n, c.Node)
		}
		if out, err := e.Resume(t.Context(), placed); err != nil || out.Done || !strings.Contains(out.Detail, "already running") {
			t.Errorf("Resume of the running job = %+v, %v; want already running", out, err)
		}
	})

	t.Run("cancel with grace", func(t *testing.T) {
		c := c.T(t)
		e := newExec(t, nil)
		id := running(t)
		out, err := e.Stop(t.Context(), target(id), false, 100*time.Millisecond)
		want := "scancel --signal=TERM --full " + id + "; scancel " + id
		if err != nil || !out.Done || out.Detail != want {
			t.Fatalf("Stop(cancel) = %+v, %v; want done by %q", out, err, want)
		}
		// The TERM ends the batch script: FAILED (exit 0:15) if it ended before
		// the scancel, else CANCELLED.
		c.WaitState(id, "CANCELLED", "FAILED")
		if out, err := e.Stop(t.Context(), target(id), false, time.Second); err != nil || out.Done || !strings.Contains(out.Detail, "already ended") {
			t.Errorf("second cancel = %+v, %v; want already ended", out, err)
		}
		if p, err := e.Check(t.Context(), target(id)); err != nil || !p.Gone {
			t.Errorf("Check of the cancelled job = %+v, %v; want gone", p, err)
		}
		// Real scancel of an ended job: silent, exit 0; with --signal, an error.
		if code, _, stderr := raw(t, "scancel", id); code != 0 || stderr != "" {
			t.Errorf("scancel of an ended job: exit %d, %q; want 0 and silence", code, stderr)
		}
		if code, _, stderr := raw(t, "scancel", "--signal=TERM", "--full", id); code != 1 || stderr == "" {
			t.Errorf("scancel --signal of an ended job: exit %d, %q", code, stderr)
		}
	})

	t.Run("unknown job", func(t *testing.T) {
		e := newExec(t, nil)
		const id = "1" // below the cluster's FirstJobId
		if _, err := e.Stop(t.Context(), target(id), false, time.Second); !errors.Is(err, executor.ErrNotFound) {
			t.Errorf("Stop of an unknown job: %v; want ErrNotFound", err)
		}
		if _, err := e.Resume(t.Context(), target(id)); !errors.Is(err, executor.ErrNotFound) {
			t.Errorf("Resume of an unknown job: %v; want ErrNotFound", err)
		}
		if _, err := e.Owner(t.Context(), target(id)); !errors.Is(err, executor.ErrNotFound) {
			t.Errorf("Owner of an unknown job: %v; want ErrNotFound", err)
		}
		if p, err := e.Check(t.Context(), target(id)); err != nil || !p.Gone {
			t.Errorf("Check of an unknown job = %+v, %v; want gone", p, err)
		}
		// Real scancel: an unknown job is silently fine (exit 0), except with
		// --signal (exit 1): the executor reads the state first either way.
		if code, _, stderr := raw(t, "scancel", id); code != 0 {
			t.Errorf("scancel of an unknown job: exit %d, %q; want 0", code, stderr)
		}
		if code, _, stderr := raw(t, "scancel", "--signal=TERM", id); code != 1 || !strings.Contains(stderr, "Invalid job id specified") {
			t.Errorf("scancel --signal of an unknown job: exit %d, %q; want 1, Invalid job id specified", code, stderr)
		}
	})

	t.Run("requeue disabled", func(t *testing.T) {
		c := c.T(t)
		e := newExec(t, nil)
		id := running(t, "--no-requeue")
		_, err := e.Stop(t.Context(), target(id), true, 0)
		if !errors.Is(err, executor.ErrUnsupported) || !strings.Contains(err.Error(), "Requested operation is presently disabled") {
			t.Errorf("Stop(requeue) of a --no-requeue job: %v; want ErrUnsupported with Slurm's message", err)
		}
		if st := c.Field(id, "JobState"); st != "RUNNING" {
			t.Errorf("JobState %s, want it left RUNNING", st)
		}
	})

	t.Run("owner", func(t *testing.T) {
		c := c.T(t)
		e := newExec(t, func(cfg *executor.SlurmConfig) {
			cfg.Accounts = map[string]string{"vision": "team-vision"}
			cfg.Partitions = map[string]string{c.Partition: "training"}
		})
		id := running(t, "--account=vision")
		o, err := e.Owner(t.Context(), target(id))
		if err != nil || o.Team != "team-vision" || o.Pool != "training" || o.Account != "vision" || o.User != "root" || o.Partition != c.Partition {
			t.Errorf("Owner = %+v, %v; want account vision → team-vision, user root, partition %s → training", o, err, c.Partition)
		}
		other := running(t, "--account=nobody")
		if _, err := e.Owner(t.Context(), target(other)); !errors.Is(err, executor.ErrUnmapped) {
			t.Errorf("Owner of an unmapped account: %v; want ErrUnmapped", err)
		}
	})

	t.Run("controller down", func(t *testing.T) {
		c := c.T(t)
		id := running(t)
		// With MessageTimeout=2 scontrol gives up quickly and says why: retryable.
		down := c.Unreachable(2)
		e := newExec(t, func(cfg *executor.SlurmConfig) {
			cfg.Scontrol, cfg.Scancel = filepath.Join(down, "scontrol"), filepath.Join(down, "scancel")
		})
		_, err := e.Stop(t.Context(), target(id), true, 0)
		if !errors.Is(err, ErrUnavailable) || !IsRetryable(err) || !strings.Contains(err.Error(), "Unable to contact slurm controller") {
			t.Errorf("Stop with the controller down: %v; want retryable ErrUnavailable", err)
		}
		// With Slurm's default MessageTimeout a command takes about 18 s to give
		// up; the executor's own timeout bounds it.
		down = c.Unreachable(0)
		e = newExec(t, func(cfg *executor.SlurmConfig) {
			cfg.Scontrol, cfg.Scancel, cfg.Timeout = filepath.Join(down, "scontrol"), filepath.Join(down, "scancel"), time.Second
		})
		if _, err := e.Resume(t.Context(), target(id)); !errors.Is(err, ErrTimeout) || !IsRetryable(err) {
			t.Errorf("Resume with the controller down: %v; want retryable ErrTimeout", err)
		}
	})
}
