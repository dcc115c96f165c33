package agent

import (
	"cmp"

	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
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

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/bus/agentwire"
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

var secret = agentwire.SharedSecret("0123456789abcdef-test-secret")

// keyPair writes a new ed25519 key pair as openssl does (PKCS #8 and PKIX PEM)
// and returns the scheduler's loaded private key and the public key's file.
func keyPair(t *testing.T) (agentwire.PrivateKey, string) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	privFile := filepath.Join(dir, "scheduler.key")
	if err := os.WriteFile(privFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if der, err = x509.MarshalPKIXPublicKey(pub); err != nil {
		t.Fatal(err)
	}
	pubFile := filepath.Join(dir, "scheduler.pub")
	if err := os.WriteFile(pubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	key, err := agentwire.LoadPrivateKey(privFile)
	if err != nil {
		t.Fatal(err)
	}
	return key, pubFile
}

// clock is a settable clock for the agent.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

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

// startAgent runs an agent for c1/node-a checking commands with pubFile (the
// scheduler's public key) on a real server; with a clock, the agent runs on it.
func startAgent(t *testing.T, view ProcessView, pubFile string, clk *clock) (*bustest.Bus, *Agent) {
	t.Helper()
	b := bustest.Start(t)
	cfg := DefaultConfig()
	cfg.Cluster, cfg.Node, cfg.PublicKeyFile, cfg.StateDir = "c1", "node-a", pubFile, t.TempDir()
	return b, run(t, b, cfg, view, clk)
}

// startSecretAgent runs an agent checking commands with the shared secret.
func startSecretAgent(t *testing.T, view ProcessView) *bustest.Bus {
	t.Helper()
	b := bustest.Start(t)
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, secret, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Cluster, cfg.Node, cfg.SecretFile = "c1", "node-a", p
	run(t, b, cfg, view, nil)
	return b
}

func run(t *testing.T, b *bustest.Bus, cfg Config, view ProcessView, clk *clock, opts ...Option) *Agent {
	t.Helper()
	a, err := New(cfg, b.Conn, view, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if clk != nil {
		a.now = clk.now
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	<-a.Listening()
	return a
}

// send seals cmd with key for c1/node-a (unless it names another agent), issued
// now unless it says when, and returns the answer of node-a's agent.
func send(t *testing.T, b *bustest.Bus, cmd agentwire.Command, key agentwire.Signer) agentwire.Result {
	t.Helper()
	if cmd.IssuedAt.IsZero() {
		cmd.IssuedAt = time.Now()
	}
	cmd.Cluster, cmd.Node = cmp.Or(cmd.Cluster, "c1"), cmp.Or(cmd.Node, "node-a")
	data, err := agentwire.Seal(cmd, key)
	if err != nil {
		t.Fatal(err)
	}
	return request(t, b, data)
}

// request sends sealed bytes to node-a's agent as they are.
func request(t *testing.T, b *bustest.Bus, data []byte) agentwire.Result {
	t.Helper()
	msg, err := b.Conn.RequestWithContext(t.Context(), bus.ActionsSubject("c1", "node-a"), data)
	if err != nil {
		t.Fatal(err)
	}
	var res agentwire.Result
	if err := json.Unmarshal(msg.Data, &res); err != nil {
		t.Fatal(err)
	}
	return res
}

func TestTerminateAndKillRealProcesses(t *testing.T) {
	polite, politeGone := child(t, "exec sleep 30")
	stubborn, stubbornGone := child(t, `trap "" TERM; echo ready; while :; do sleep 0.05; done`)
	view := &fakeView{pids: map[uint32]string{polite: "job-a", stubborn: "job-b"}}
	key, pub := keyPair(t)
	b, _ := startAgent(t, view, pub, nil)

	res := send(t, b, agentwire.Command{ID: "c1", Action: agentwire.ActionTerminate, PID: polite, Job: "job-a", GraceSeconds: 5}, key)
	if res.Outcome != agentwire.OutcomeTerminated || strings.Join(res.Signals, ",") != "SIGTERM" {
		t.Fatalf("polite process: %+v", res)
	}
	<-politeGone

	res = send(t, b, agentwire.Command{ID: "c2", Action: agentwire.ActionTerminate, PID: stubborn, GraceSeconds: 0.3}, key)
	if res.Outcome != agentwire.OutcomeKilled || strings.Join(res.Signals, ",") != "SIGTERM,SIGKILL" {
		t.Fatalf("process ignoring SIGTERM: %+v", res)
	}
	<-stubbornGone

	// A repeated command ID gets the first answer and signals nothing.
	again := send(t, b, agentwire.Command{ID: "c1", Action: agentwire.ActionTerminate, PID: polite, Job: "job-a", GraceSeconds: 5}, key)
	if again.Outcome != agentwire.OutcomeTerminated {
		t.Fatalf("repeat: %+v", again)
	}
}

// TestSharedSecretMode: an agent with secret_file carries out commands signed
// with the secret, and refuses those signed with another secret or a key.
func TestSharedSecretMode(t *testing.T) {
	pid, gone := child(t, "exec sleep 30")
	b := startSecretAgent(t, &fakeView{pids: map[uint32]string{pid: "job-a"}})
	key, _ := keyPair(t)
	for _, tc := range []struct {
		name string
		key  agentwire.Signer
		want string
	}{
		{"another secret", agentwire.SharedSecret("not-the-secret-at-all"), "signature"},
		{"an ed25519 key", key, "signed with ed25519, this agent accepts hmac-sha256 only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := send(t, b, agentwire.Command{ID: "s-" + tc.name, Action: agentwire.ActionKill, PID: pid}, tc.key)
			if res.Outcome != agentwire.OutcomeRefused || !strings.Contains(res.Error, tc.want) {
				t.Fatalf("got %+v, want refused mentioning %q", res, tc.want)
			}
		})
	}
	if res := send(t, b, agentwire.Command{ID: "s-ok", Action: agentwire.ActionKill, PID: pid}, secret); res.Outcome != agentwire.OutcomeKilled {
		t.Fatalf("signed with the secret: %+v", res)
	}
	<-gone
}

// TestReplayRefusedWithoutEffect sends one sealed command twice: the second
// time it is refused as replayed and signals nothing, though the process it
// names now holds a GPU; once the command is stale, it is refused as stale and
// its nonce is forgotten.
func TestReplayRefusedWithoutEffect(t *testing.T) {
	pid, gone := child(t, "exec sleep 30")
	view := &fakeView{pids: map[uint32]string{}}
	clk := &clock{t: time.Now()}
	key, pub := keyPair(t)
	b, a := startAgent(t, view, pub, clk)
	data, err := agentwire.Seal(agentwire.Command{ID: "r", Cluster: "c1", Node: "node-a", Action: agentwire.ActionKill, PID: pid, IssuedAt: clk.now()}, key)
	if err != nil {
		t.Fatal(err)
	}
	if res := request(t, b, data); res.Outcome != agentwire.OutcomeRefused || !strings.Contains(res.Error, "held no GPU") {
		t.Fatalf("first delivery: %+v, want refused for holding no GPU", res)
	}
	view.mu.Lock()
	view.pids[pid] = "job-a"
	view.mu.Unlock()
	if res := request(t, b, data); res.Outcome != agentwire.OutcomeRefused || !strings.Contains(res.Error, "replayed") {
		t.Fatalf("replay: %+v, want refused as replayed", res)
	}
	clk.add(DefaultConfig().MaxSkew + time.Second)
	if res := request(t, b, data); res.Outcome != agentwire.OutcomeRefused || !strings.Contains(res.Error, "too old") {
		t.Fatalf("replay once stale: %+v, want refused as stale", res)
	}
	select {
	case <-gone:
		t.Fatal("a replayed command signalled the process")
	default:
	}
	a.mu.Lock()
	a.expire()
	n := len(a.nonces)
	a.mu.Unlock()
	if n != 0 {
		t.Errorf("%d nonces kept after their commands went stale", n)
	}
}

func TestRefusals(t *testing.T) {
	pid, gone := child(t, "exec sleep 30")
	other, _ := child(t, "exec sleep 30")
	view := &fakeView{pids: map[uint32]string{pid: "job-a", 1: "x", uint32(os.Getpid()): "y"}}
	key, pub := keyPair(t)
	otherKey, _ := keyPair(t)
	b, _ := startAgent(t, view, pub, nil)
	tests := []struct {
		name string
		cmd  agentwire.Command
		key  agentwire.Signer
		want string
	}{
		{"signed by another key", agentwire.Command{ID: "r1", Action: agentwire.ActionKill, PID: pid}, otherKey, "signature"},
		{"signed with a shared secret", agentwire.Command{ID: "r1s", Action: agentwire.ActionKill, PID: pid}, secret, "signed with hmac-sha256, this agent accepts ed25519 only"},
		{"stale", agentwire.Command{ID: "r2", Action: agentwire.ActionKill, PID: pid, IssuedAt: time.Now().Add(-time.Hour)}, key, "too old"},
		{"from the future", agentwire.Command{ID: "r2f", Action: agentwire.ActionKill, PID: pid, IssuedAt: time.Now().Add(time.Hour)}, key, "from the future"},
		{"for another node", agentwire.Command{ID: "r2n", Node: "node-b", Action: agentwire.ActionKill, PID: pid}, key, "for another node: c1/node-b"},
		{"for another cluster", agentwire.Command{ID: "r2c", Cluster: "c2", Action: agentwire.ActionKill, PID: pid}, key, "for another node: c2/node-a"},
		{"pid 1", agentwire.Command{ID: "r3", Action: agentwire.ActionKill, PID: 1}, key, "PID 1"},
		{"itself", agentwire.Command{ID: "r4", Action: agentwire.ActionKill, PID: uint32(os.Getpid())}, key, "collector itself"},
		{"no GPU", agentwire.Command{ID: "r5", Action: agentwire.ActionKill, PID: other}, key, "held no GPU"},
		{"other job", agentwire.Command{ID: "r6", Action: agentwire.ActionKill, PID: pid, Job: "job-z"}, key, "belongs to job"},
		{"bad action", agentwire.Command{ID: "r7", Action: "explode", PID: pid}, key, "malformed"},
		// 1e300 s used to convert to a negative grace (no wait before SIGKILL).
		{"grace past a duration", agentwire.Command{ID: "r8", Action: agentwire.ActionTerminate, PID: pid, GraceSeconds: 1e300}, key, "grace_seconds: 1e+300 seconds is more than a duration holds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := send(t, b, tt.cmd, tt.key)
			if res.Outcome != agentwire.OutcomeRefused || !strings.Contains(res.Error, tt.want) {
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
	key, pubFile := keyPair(t)
	pub, err := agentwire.LoadPublicKeys(pubFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		sealer agentwire.Signer
		opener agentwire.Verifier
	}{
		{"ed25519", key, pub},
		{"shared secret", secret, secret},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := agentwire.Seal(agentwire.Command{ID: "x", Cluster: "c", Node: "n", Action: agentwire.ActionKill, PID: 42, IssuedAt: time.Now()}, tc.sealer)
			if err != nil {
				t.Fatal(err)
			}
			tampered := []byte(strings.Replace(string(data), `"pid":42`, `"pid":43`, 1))
			if string(tampered) == string(data) {
				t.Fatal("test did not tamper")
			}
			if _, err := agentwire.Open(tampered, tc.opener, time.Now(), time.Minute); !errors.Is(err, agentwire.ErrBadSignature) {
				t.Fatalf("tampered command: %v", err)
			}
			if _, err := agentwire.Open(data, tc.opener, time.Now(), time.Minute); err != nil {
				t.Fatal(err)
			}
		})
	}
	// The public key is no secret: an HMAC keyed with it, labelled hmac-sha256, is
	// refused by an ed25519 agent rather than checked as one.
	forged, err := agentwire.Seal(agentwire.Command{ID: "x", Cluster: "c", Node: "n", Action: agentwire.ActionKill, PID: 42, IssuedAt: time.Now()}, agentwire.SharedSecret(pub[0]))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := agentwire.Open(forged, pub, time.Now(), time.Minute); !errors.Is(err, agentwire.ErrBadSignature) {
		t.Fatalf("HMAC keyed with the public key: %v", err)
	}
}

// TestOpenSSLKeysAndRotation: the key pair openssl writes (testdata) loads and
// signs; a public key file with two keys accepts commands signed by either.
func TestOpenSSLKeysAndRotation(t *testing.T) {
	key, err := agentwire.LoadPrivateKey(filepath.Join("testdata", "scheduler-ed25519.key"))
	if err != nil {
		t.Fatal(err)
	}
	pub, err := agentwire.LoadPublicKeys(filepath.Join("testdata", "scheduler-ed25519.pub"))
	if err != nil {
		t.Fatal(err)
	}
	if len(pub) != 1 || !pub[0].Equal(key.Public()) {
		t.Fatalf("the public key file does not hold the private key's public key")
	}
	next, nextFile := keyPair(t)
	both := filepath.Join(t.TempDir(), "both.pub")
	a, _ := os.ReadFile(filepath.Join("testdata", "scheduler-ed25519.pub"))
	n, _ := os.ReadFile(nextFile)
	if err := os.WriteFile(both, append(a, n...), 0o644); err != nil {
		t.Fatal(err)
	}
	keys, err := agentwire.LoadPublicKeys(both)
	if err != nil || len(keys) != 2 {
		t.Fatalf("two keys: %d, %v", len(keys), err)
	}
	other, _ := keyPair(t)
	for _, tc := range []struct {
		name string
		key  agentwire.Signer
		ok   bool
	}{{"old key", key, true}, {"new key", next, true}, {"a third key", other, false}} {
		data, err := agentwire.Seal(agentwire.Command{ID: "x", Cluster: "c", Node: "n", Action: agentwire.ActionKill, PID: 42, IssuedAt: time.Now()}, tc.key)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := agentwire.Open(data, keys, time.Now(), time.Minute); (err == nil) != tc.ok {
			t.Errorf("%s: Open = %v, want ok %t", tc.name, err, tc.ok)
		}
	}
}

func TestConfigNeedsKey(t *testing.T) {
	_, pub := keyPair(t)
	short := filepath.Join(t.TempDir(), "s")
	_ = os.WriteFile(short, []byte("short"), 0o600)
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"neither key nor secret", func(*Config) {}, "public_key_file: empty"},
		{"both", func(c *Config) { c.PublicKeyFile, c.SecretFile = pub, short }, "set one, not both"},
		{"short secret", func(c *Config) { c.SecretFile = short }, "16 bytes"},
		{"missing key file", func(c *Config) { c.PublicKeyFile = filepath.Join(t.TempDir(), "none") }, "public_key_file: open"},
		{"private key as public key", func(c *Config) { c.PublicKeyFile = filepath.Join("testdata", "scheduler-ed25519.key") }, "want PUBLIC KEY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Cluster, cfg.Node = "c", "n"
			tc.edit(&cfg)
			if _, err := New(cfg, nil, &fakeView{}); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}
