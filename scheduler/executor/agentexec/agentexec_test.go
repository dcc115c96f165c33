package agentexec

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
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

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/bus/agentwire"
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

// keyPair writes a new ed25519 key pair as openssl does and returns the files of
// the private key (the scheduler's) and the public key (the agents').
func keyPair(t *testing.T) (privFile, pubFile string) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, kind string, der []byte, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	privFile = write("scheduler.key", "PRIVATE KEY", der, err)
	der, err = x509.MarshalPKIXPublicKey(pub)
	return privFile, write("scheduler.pub", "PUBLIC KEY", der, err)
}

// testBus is a server whose users are the scheduler and the collector of node-a,
// each with its least-privilege permissions.
type testBus struct {
	*bustest.Bus
	scheduler, node string // seed files
}

func startBus(t *testing.T) *testBus {
	t.Helper()
	sched, schedSeed := bustest.NewUser(t, "scheduler", []bus.Role{bus.RoleScheduler}, "", "")
	n, nodeSeed := bustest.NewUser(t, node, []bus.Role{bus.RoleCollector, bus.RoleAgent}, cluster, node)
	return &testBus{Bus: bustest.StartUsers(t, sched, n), scheduler: schedSeed, node: nodeSeed}
}

// connect connects over TCP with a seed file.
func (b *testBus) connect(t *testing.T, name, seed string) *nats.Conn {
	t.Helper()
	nc, err := bus.Connect(bus.ClientConfig{URL: b.URL, NKeyFile: seed}, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// startAgent runs a real node agent, checking commands with the configured key or
// secret, on node-a's credential, and returns its process view.
func startAgent(t *testing.T, b *testBus, edit func(*agent.Config)) *view {
	t.Helper()
	v := &view{pids: map[uint32]string{}}
	cfg := agent.DefaultConfig()
	cfg.Cluster, cfg.Node = cluster, node
	edit(&cfg)
	a, err := agent.New(cfg, b.connect(t, "agent", b.node), v)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	<-a.Listening()
	return v
}

// withKey has the agent check commands with pubFile.
func withKey(pubFile string) func(*agent.Config) {
	return func(c *agent.Config) { c.PublicKeyFile = pubFile }
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

// newExec returns an executor on the scheduler's credential, signing with the
// configured key or secret.
func newExec(t *testing.T, b *testBus, edit func(*executor.AgentConfig)) *Executor {
	t.Helper()
	cfg := executor.DefaultAgentConfig()
	cfg.Cluster = cluster
	cfg.ReplyMargin = 15 * time.Second
	edit(&cfg)
	e, err := New(cfg, b.connect(t, "scheduler", b.scheduler))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// signWith has the executor sign with privFile.
func signWith(privFile string) func(*executor.AgentConfig) {
	return func(c *executor.AgentConfig) { c.PrivateKeyFile = privFile }
}

func TestKillRealProcess(t *testing.T) {
	b := startBus(t)
	priv, pub := keyPair(t)
	v := startAgent(t, b, withKey(pub))
	e := newExec(t, b, signWith(priv))
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
	b := startBus(t)
	priv, pub := keyPair(t)
	v := startAgent(t, b, withKey(pub))
	e := newExec(t, b, signWith(priv))
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

// TestRefusedWrongKey: commands signed with another key, or another secret, are
// refused and signal nothing.
func TestRefusedWrongKey(t *testing.T) {
	_, pub := keyPair(t)
	otherPriv, _ := keyPair(t)
	for _, tc := range []struct {
		name  string
		agent func(*agent.Config)
		exec  func(*executor.AgentConfig)
	}{
		{"another key", withKey(pub), signWith(otherPriv)},
		{"another secret", func(c *agent.Config) { c.SecretFile = writeSecret(t, "shared-secret-0123456789") },
			func(c *executor.AgentConfig) { c.SecretFile = writeSecret(t, "not-the-agents-secret") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := startBus(t)
			v := startAgent(t, b, tc.agent)
			e := newExec(t, b, tc.exec)
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
		})
	}
}

// TestSharedSecret: the older mode, a secret shared by the scheduler and the
// agents, still kills.
func TestSharedSecret(t *testing.T) {
	b := startBus(t)
	secret := writeSecret(t, "shared-secret-0123456789")
	v := startAgent(t, b, func(c *agent.Config) { c.SecretFile = secret })
	e := newExec(t, b, func(c *executor.AgentConfig) { c.SecretFile = secret })
	pid, exited := child(t)
	v.set(pid, job)
	out, err := e.Kill(t.Context(), executor.Target{Job: job, Node: node, PID: pid}, 0)
	if err != nil || !out.Done {
		t.Fatalf("kill: %+v, %v", out, err)
	}
	<-exited
}

func TestUnreachableAndUnsupported(t *testing.T) {
	b := startBus(t)
	priv, _ := keyPair(t)
	e := newExec(t, b, signWith(priv))
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
	a := CommandID("c1", "n1", "j", 7, agentwire.ActionKill)
	for _, other := range []string{
		CommandID("c1", "n1", "j", 7, agentwire.ActionTerminate),
		CommandID("c1", "n1", "j", 8, agentwire.ActionKill),
		CommandID("c1", "n2", "j", 7, agentwire.ActionKill),
		CommandID("c1", "n1", "k", 7, agentwire.ActionKill),
	} {
		if other == a {
			t.Errorf("ID %s shared by different commands", a)
		}
	}
	if CommandID("c1", "n1", "j", 7, agentwire.ActionKill) != a {
		t.Error("ID not stable")
	}
}

func TestNewValidates(t *testing.T) {
	b := bustest.Start(t)
	priv, pub := keyPair(t)
	for _, tc := range []struct {
		name string
		edit func(*executor.AgentConfig)
		want string
	}{
		{"no key file", func(c *executor.AgentConfig) { c.PrivateKeyFile = "" }, "private_key_file: empty"},
		{"missing key file", func(c *executor.AgentConfig) { c.PrivateKeyFile = filepath.Join(t.TempDir(), "none") }, "private_key_file: open"},
		{"public key as private key", func(c *executor.AgentConfig) { c.PrivateKeyFile = pub }, "no PEM PRIVATE KEY"},
		{"short secret", func(c *executor.AgentConfig) { c.PrivateKeyFile, c.SecretFile = "", writeSecret(t, "short") }, "16 bytes"},
		{"no margin", func(c *executor.AgentConfig) { c.ReplyMargin = 0 }, "reply_margin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := executor.DefaultAgentConfig()
			cfg.PrivateKeyFile = priv
			tc.edit(&cfg)
			if _, err := New(cfg, b.Conn); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}

// TestPoolReachesTheAgent: the pool the scheduler resolved travels in the signed
// command, and an agent that protects that pool refuses the kill; the same kill
// in another pool goes through.
func TestPoolReachesTheAgent(t *testing.T) {
	b := startBus(t)
	priv, pub := keyPair(t)
	v := startAgent(t, b, func(c *agent.Config) {
		withKey(pub)(c)
		c.ProtectedPools = []string{"production-training"}
	})
	e := newExec(t, b, signWith(priv))

	pid, exited := child(t)
	v.set(pid, job)
	target := executor.Target{Job: job, Source: "process", Node: node, PID: pid, Pool: "production-training"}
	_, err := e.Kill(t.Context(), target, 0)
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "protected") {
		t.Fatalf("kill in a protected pool: err = %v, want %v naming the protection", err, ErrRefused)
	}
	select {
	case <-exited:
		t.Fatal("the agent signalled a process of a protected pool")
	default:
	}
	// Another process (the agent answers a command ID it has seen from memory).
	pid2, exited2 := child(t)
	v.set(pid2, job)
	target.PID, target.Pool = pid2, "dev"
	if out, err := e.Kill(t.Context(), target, 0); err != nil || !out.Done {
		t.Fatalf("kill in pool dev: %+v, %v; want done", out, err)
	}
	<-exited2
	_ = syscall.Kill(int(pid), syscall.SIGKILL)
	<-exited
}
