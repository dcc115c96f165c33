package agentexec

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gpupool/gpupool/bus/bustest"
	"github.com/gpupool/gpupool/collector/agent"
	"github.com/gpupool/gpupool/scheduler/executor"
)

const (
	cluster = "c1"
	node    = "node-a"
	job     = "process/node-a/train"
)

// view is the collector's last sample, as the agent sees it.
type view struct {
	mu   sync.Mutex
	pids map[uint32]string
}

func (v *view) GPUProcesses() map[uint32]string {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make(map[uint32]string, len(v.pids))
	for k, j := range v.pids {
		out[k] = j
	}
	return out
}

func (v *view) set(pid uint32, job string) {
	v.mu.Lock()
	v.pids[pid] = job
	v.mu.Unlock()
}

func writeSecret(t *testing.T, secret string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// startAgent runs a real node agent on its own connection to a real embedded NATS
// server and returns the server and the agent's process view.
func startAgent(t *testing.T) (*bustest.Bus, *view) {
	t.Helper()
	b := bustest.Start(t)
	conn, err := b.Server.Connect("agent")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	v := &view{pids: map[uint32]string{}}
	cfg := agent.DefaultConfig()
	cfg.Cluster, cfg.Node, cfg.SecretFile = cluster, node, writeSecret(t, "shared-secret-0123456789")
	a, err := agent.New(cfg, conn, v)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	<-a.Listening()
	return b, v
}

// child starts `sleep 30`, reaped when it exits; exited closes then.
func child(t *testing.T) (pid uint32, exited <-chan struct{}) {
	t.Helper()
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	return uint32(cmd.Process.Pid), done
}

func newExec(t *testing.T, nc *nats.Conn, secret string) *Executor {
	t.Helper()
	cfg := executor.DefaultAgentConfig()
	cfg.Cluster, cfg.SecretFile = cluster, writeSecret(t, secret)
	cfg.ReplyMargin = 15 * time.Second
	e, err := New(cfg, nc)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestKillRealProcess(t *testing.T) {
	b, v := startAgent(t)
	e := newExec(t, b.Conn, "shared-secret-0123456789")
	for _, tc := range []struct {
		name       string
		stop       bool
		grace      time.Duration
		inView     bool
		viewJob    string
		gone       bool // the process has exited before the command
		wantDone   bool
		wantErr    error
		wantSignal string
		wantReason string
	}{
		{name: "terminate with grace", grace: 10 * time.Second, inView: true, wantDone: true, wantSignal: "SIGTERM"},
		{name: "kill without grace", inView: true, wantDone: true, wantSignal: "SIGKILL"},
		{name: "stop with a PID is a kill", stop: true, grace: 10 * time.Second, inView: true, wantDone: true, wantSignal: "SIGTERM"},
		{name: "already gone", inView: true, gone: true},
		{name: "refused: no GPU", grace: time.Second, wantErr: ErrRefused, wantReason: "held no GPU"},
		{name: "refused: another job's PID", inView: true, viewJob: "process/node-a/other", wantErr: ErrRefused, wantReason: "belongs to job"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pid, exited := child(t)
			if tc.inView {
				v.set(pid, cmpOr(tc.viewJob, job))
			}
			if tc.gone {
				_ = syscall.Kill(int(pid), syscall.SIGKILL)
				<-exited
			}
			target := executor.Target{Job: job, Source: "process", Node: node, PID: pid}
			var out executor.Outcome
			var err error
			if tc.stop {
				out, err = e.Stop(t.Context(), target, true, tc.grace)
			} else {
				out, err = e.Kill(t.Context(), target, tc.grace)
			}
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.wantReason) || IsRetryable(err) {
					t.Fatalf("err = %v, want %v (%s), not retryable", err, tc.wantErr, tc.wantReason)
				}
				select {
				case <-exited:
					t.Fatal("a refused command signalled the process")
				default:
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if out.Done != tc.wantDone || !strings.Contains(out.Detail, tc.wantSignal) {
				t.Fatalf("outcome %+v, want Done %t with %s", out, tc.wantDone, tc.wantSignal)
			}
			<-exited
		})
	}
}

// TestRetrySignalsOnce: a retried kill carries the same command ID, so the agent
// answers it from memory rather than signalling again.
func TestRetrySignalsOnce(t *testing.T) {
	b, v := startAgent(t)
	e := newExec(t, b.Conn, "shared-secret-0123456789")
	pid, exited := child(t)
	v.set(pid, job)
	target := executor.Target{Job: job, Node: node, PID: pid}
	first, err := e.Kill(t.Context(), target, 0)
	if err != nil || !first.Done {
		t.Fatalf("first kill: %+v, %v", first, err)
	}
	<-exited
	again, err := e.Kill(t.Context(), target, 0)
	if err != nil || again != first {
		t.Fatalf("retry: %+v, %v; want the first answer %+v", again, err, first)
	}
	// A different action is a new command: the process is gone.
	out, err := e.Kill(t.Context(), target, time.Second)
	if err != nil || out.Done {
		t.Fatalf("terminate after kill: %+v, %v; want Done false", out, err)
	}
}

func TestRefusedBadSecret(t *testing.T) {
	b, v := startAgent(t)
	e := newExec(t, b.Conn, "not-the-agents-secret")
	pid, exited := child(t)
	v.set(pid, job)
	_, err := e.Kill(t.Context(), executor.Target{Job: job, Node: node, PID: pid}, 0)
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "signature") {
		t.Fatalf("err = %v, want a refusal for the signature", err)
	}
	select {
	case <-exited:
		t.Fatal("process signalled")
	default:
	}
}

func TestUnreachableAndUnsupported(t *testing.T) {
	b := bustest.Start(t)
	e := newExec(t, b.Conn, "shared-secret-0123456789")
	target := executor.Target{Job: job, Node: "node-without-agent", PID: 4242}
	if _, err := e.Kill(t.Context(), target, 0); !errors.Is(err, ErrUnreachable) || !IsRetryable(err) {
		t.Fatalf("err = %v, want a retryable ErrUnreachable", err)
	}
	for name, call := range map[string]func() error{
		"kill without PID": func() error { _, err := e.Kill(t.Context(), executor.Target{Job: job, Node: node}, 0); return err },
		"kill without node": func() error {
			_, err := e.Kill(t.Context(), executor.Target{Job: job, PID: 4242}, 0)
			return err
		},
		"stop without PID": func() error {
			_, err := e.Stop(t.Context(), executor.Target{Job: job, Node: node}, true, 0)
			return err
		},
		"resume": func() error { _, err := e.Resume(t.Context(), target); return err },
	} {
		t.Run(name, func(t *testing.T) {
			if err := call(); !errors.Is(err, executor.ErrUnsupported) {
				t.Fatalf("err = %v, want ErrUnsupported", err)
			}
		})
	}
}

func TestCommandIDStable(t *testing.T) {
	a := CommandID("c1", "n1", "j", 7, agent.ActionKill)
	for _, other := range []string{
		CommandID("c1", "n1", "j", 7, agent.ActionTerminate),
		CommandID("c1", "n1", "j", 8, agent.ActionKill),
		CommandID("c1", "n2", "j", 7, agent.ActionKill),
		CommandID("c1", "n1", "k", 7, agent.ActionKill),
	} {
		if other == a {
			t.Errorf("ID %s shared by different commands", a)
		}
	}
	if CommandID("c1", "n1", "j", 7, agent.ActionKill) != a {
		t.Error("ID not stable")
	}
}

func TestNewValidates(t *testing.T) {
	b := bustest.Start(t)
	for _, tc := range []struct {
		name string
		edit func(*executor.AgentConfig)
	}{
		{"no secret file", func(c *executor.AgentConfig) { c.SecretFile = "" }},
		{"missing secret file", func(c *executor.AgentConfig) { c.SecretFile = filepath.Join(t.TempDir(), "none") }},
		{"short secret", func(c *executor.AgentConfig) { c.SecretFile = writeSecret(t, "short") }},
		{"no margin", func(c *executor.AgentConfig) { c.ReplyMargin = 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := executor.DefaultAgentConfig()
			cfg.SecretFile = writeSecret(t, "shared-secret-0123456789")
			tc.edit(&cfg)
			if _, err := New(cfg, b.Conn); err == nil {
				t.Fatal("New accepted a bad config")
			}
		})
	}
}
