package agent

import (
	"bufio"
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

	"github.com/gpupool/gpupool/bus/bustest"
)

type fakeView struct {
	mu   sync.Mutex
	pids map[uint32]string
}

func (f *fakeView) GPUProcesses() map[uint32]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[uint32]string{}
	for k, v := range f.pids {
		out[k] = v
	}
	return out
}

var secret = []byte("0123456789abcdef-test-secret")

// child starts a process the test owns and reaps it when it exits.
func child(t *testing.T, script string) (pid uint32, exited <-chan struct{}) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	var ready *bufio.Reader
	if strings.Contains(script, "echo ready") {
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		ready = bufio.NewReader(out)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	// A script that says it is ready (after installing a trap, say) is waited for.
	if ready != nil {
		if line, err := ready.ReadString('\n'); err != nil || line != "ready\n" {
			t.Fatalf("child %q: read %q, %v; want ready", script, line, err)
		}
	}
	return uint32(cmd.Process.Pid), done
}

func startAgent(t *testing.T, view ProcessView) *bustest.Bus {
	t.Helper()
	b := bustest.Start(t)
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, secret, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Cluster, cfg.Node, cfg.SecretFile = "c1", "node-a", p
	a, err := New(cfg, b.Conn, view)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	<-a.Listening()
	return b
}

func send(t *testing.T, b *bustest.Bus, cmd Command, key []byte) Result {
	t.Helper()
	if cmd.IssuedAt.IsZero() {
		cmd.IssuedAt = time.Now()
	}
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	res, err := Send(ctx, b.Conn, "c1", "node-a", cmd, key)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestTerminateAndKillRealProcesses(t *testing.T) {
	polite, politeGone := child(t, "exec sleep 30")
	stubborn, stubbornGone := child(t, `trap "" TERM; echo ready; while :; do sleep 0.05; done`)
	view := &fakeView{pids: map[uint32]string{polite: "job-a", stubborn: "job-b"}}
	b := startAgent(t, view)

	res := send(t, b, Command{ID: "c1", Action: ActionTerminate, PID: polite, Job: "job-a", GraceSeconds: 5}, secret)
	if res.Outcome != OutcomeTerminated || strings.Join(res.Signals, ",") != "SIGTERM" {
		t.Fatalf("polite process: %+v", res)
	}
	<-politeGone

	res = send(t, b, Command{ID: "c2", Action: ActionTerminate, PID: stubborn, GraceSeconds: 0.3}, secret)
	if res.Outcome != OutcomeKilled || strings.Join(res.Signals, ",") != "SIGTERM,SIGKILL" {
		t.Fatalf("process ignoring SIGTERM: %+v", res)
	}
	<-stubbornGone

	// A repeated command ID gets the first answer and signals nothing.
	again := send(t, b, Command{ID: "c1", Action: ActionTerminate, PID: polite, Job: "job-a", GraceSeconds: 5}, secret)
	if again.Outcome != OutcomeTerminated {
		t.Fatalf("repeat: %+v", again)
	}
}

func TestRefusals(t *testing.T) {
	pid, gone := child(t, "exec sleep 30")
	other, _ := child(t, "exec sleep 30")
	view := &fakeView{pids: map[uint32]string{pid: "job-a", 1: "x", uint32(os.Getpid()): "y"}}
	b := startAgent(t, view)
	tests := []struct {
		name string
		cmd  Command
		key  []byte
		want string
	}{
		{"wrong secret", Command{ID: "r1", Action: ActionKill, PID: pid}, []byte("not-the-secret-at-all"), "signature"},
		{"stale", Command{ID: "r2", Action: ActionKill, PID: pid, IssuedAt: time.Now().Add(-time.Hour)}, secret, "too old"},
		{"pid 1", Command{ID: "r3", Action: ActionKill, PID: 1}, secret, "PID 1"},
		{"itself", Command{ID: "r4", Action: ActionKill, PID: uint32(os.Getpid())}, secret, "collector itself"},
		{"no GPU", Command{ID: "r5", Action: ActionKill, PID: other}, secret, "held no GPU"},
		{"other job", Command{ID: "r6", Action: ActionKill, PID: pid, Job: "job-z"}, secret, "belongs to job"},
		{"bad action", Command{ID: "r7", Action: "explode", PID: pid}, secret, "malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := send(t, b, tt.cmd, tt.key)
			if res.Outcome != OutcomeRefused || !strings.Contains(res.Error, tt.want) {
				t.Fatalf("got %+v, want refused mentioning %q", res, tt.want)
			}
		})
	}
	select {
	case <-gone:
		t.Fatal("a refused command signalled the process")
	default:
	}
	if err := syscall.Kill(int(other), 0); err != nil {
		t.Fatalf("process without a GPU was signalled: %v", err)
	}
}

func TestOpenRejectsTampering(t *testing.T) {
	data, err := Seal(Command{ID: "x", Action: ActionKill, PID: 42, IssuedAt: time.Now()}, secret)
	if err != nil {
		t.Fatal(err)
	}
	tampered := []byte(strings.Replace(string(data), `"pid":42`, `"pid":43`, 1))
	if string(tampered) == string(data) {
		t.Fatal("test did not tamper")
	}
	if _, err := Open(tampered, secret, time.Now(), time.Minute); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("tampered command: %v", err)
	}
	if _, err := Open(data, secret, time.Now(), time.Minute); err != nil {
		t.Fatal(err)
	}
}

func TestConfigNeedsSecret(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Cluster, cfg.Node = "c", "n"
	if _, err := New(cfg, nil, &fakeView{}); err == nil || !strings.Contains(err.Error(), "secret_file") {
		t.Fatalf("agent without a secret: %v", err)
	}
	short := filepath.Join(t.TempDir(), "s")
	_ = os.WriteFile(short, []byte("short"), 0o600)
	cfg.SecretFile = short
	if _, err := New(cfg, nil, &fakeView{}); err == nil || !strings.Contains(err.Error(), "16 bytes") {
		t.Fatalf("short secret: %v", err)
	}
}
