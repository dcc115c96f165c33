package nats

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/gpupool/gpupool/analyzer/findings"
	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/bus/bustest"
	"github.com/gpupool/gpupool/collector"
	"github.com/gpupool/gpupool/collector/agent"
	"github.com/gpupool/gpupool/ingest"
	"github.com/gpupool/gpupool/reports/alerts"
	"github.com/gpupool/gpupool/scheduler/audit"
	"github.com/gpupool/gpupool/scheduler/executor"
	"github.com/gpupool/gpupool/scheduler/executor/agentexec"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
)

var update = flag.Bool("update", false, "rewrite nats-server.conf")

const confFile = "nats-server.conf"

// example is one user of the example configuration.
type example struct {
	name          string
	roles         []bus.Role
	cluster, node string
}

var examples = []example{
	{"gpu-01", []bus.Role{bus.RoleCollector, bus.RoleAgent}, "c1", "gpu-01"},
	{"gpu-02", []bus.Role{bus.RoleCollector, bus.RoleAgent}, "c1", "gpu-02"},
	{"loadgen (gpupool collector --source sim)", []bus.Role{bus.RoleCollector}, bus.AnyName, bus.AnyName},
	{"ingest", []bus.Role{bus.RoleIngest, bus.RoleStreams}, "", ""},
	{"analyzer", []bus.Role{bus.RoleAnalyzer}, "", ""},
	{"scheduler", []bus.Role{bus.RoleScheduler}, "", ""},
	{"alerter (gpupool alerts)", []bus.Role{bus.RoleAlerter}, "", ""},
	{"operator (nats CLI)", []bus.Role{bus.RoleAdmin}, "", ""},
}

// exampleKey derives an example user's key from its name, so the test holds the
// seeds of the keys the file lists: they are public, for examples only.
func exampleKey(t *testing.T, name string) nkeys.KeyPair {
	t.Helper()
	sum := sha256.Sum256([]byte("gpupool example nats user " + name))
	kp, err := nkeys.FromRawSeed(nkeys.PrefixByteUser, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return kp
}

const comment = `nats-server configuration for gpupool: one account with JetStream, one
least-privilege nkey user per process, TLS. docs/bus-security.md explains each
role and has the role × subject table; run it with nats-server -c nats-server.conf.

Written by bus.ServerConfig (go test ./deploy/nats -update); the test runs it with
gpupool's components. EXAMPLE KEYS: their seeds are derived in nats_test.go, so
anyone can use them. Make a key per process with nk -gen user -pubout, put each
public key (U…) here and the seed (SU…) in that process's bus.nkey_file.`

func exampleConfig(t *testing.T) bus.ServerConfig {
	t.Helper()
	cfg := bus.ServerConfig{
		Comment: comment, Name: "gpupool-nats", Listen: "0.0.0.0:4222", StoreDir: "/var/lib/nats/jetstream",
		TLS: bus.ServerTLS{CertFile: "/etc/nats/tls/server.pem", KeyFile: "/etc/nats/tls/server-key.pem", CAFile: "/etc/nats/tls/ca.pem"},
	}
	for _, e := range examples {
		pub, err := exampleKey(t, e.name).PublicKey()
		if err != nil {
			t.Fatal(err)
		}
		cfg.Users = append(cfg.Users, bus.User{Name: e.name, NKey: pub, Roles: e.roles, Cluster: e.cluster, Node: e.node})
	}
	return cfg
}

// TestExampleIsGenerated checks nats-server.conf is what bus.ServerConfig writes
// for the example users (-update rewrites it).
func TestExampleIsGenerated(t *testing.T) {
	want, err := exampleConfig(t).Render()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(confFile, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(confFile)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("%s differs from what bus.ServerConfig writes (go test ./deploy/nats -update)", confFile)
	}
}

// TestDefaultBuckets: the buckets the ingest and alerter roles are granted are the
// ones ingest and the alerter use by default.
func TestDefaultBuckets(t *testing.T) {
	if got := ingest.DefaultConfig().IntentBucket; got != bus.DefaultIntentBucket {
		t.Errorf("ingest's intent bucket is %s, the ingest role grants %s", got, bus.DefaultIntentBucket)
	}
	if got := alerts.DefaultConfig().StateBucket; got != bus.DefaultStateBucket {
		t.Errorf("the alerter's state bucket is %s, the alerter role grants %s", got, bus.DefaultStateBucket)
	}
}

// site is nats-server.conf running, with TLS, and the example users' seeds.
type site struct {
	url, ca string
	seeds   map[string]string // by the first word of the user's name

	warns *warnings
}

// startExample runs a nats-server from nats-server.conf, with the TLS files and
// the store moved to temporary ones and a free port.
func startExample(t *testing.T) *site {
	t.Helper()
	dir := t.TempDir()
	ca := bustest.NewCA(t, "gpupool example CA")
	cert, key := ca.Issue(t, "server", x509.ExtKeyUsageServerAuth)
	text, err := os.ReadFile(confFile)
	if err != nil {
		t.Fatal(err)
	}
	conf := strings.NewReplacer(
		`"/etc/nats/tls/server.pem"`, fmt.Sprintf("%q", cert),
		`"/etc/nats/tls/server-key.pem"`, fmt.Sprintf("%q", key),
		`"/etc/nats/tls/ca.pem"`, fmt.Sprintf("%q", ca.File),
		`"/var/lib/nats/jetstream"`, fmt.Sprintf("%q", filepath.Join(dir, "jetstream")),
		`"0.0.0.0:4222"`, `"127.0.0.1:-1"`,
	).Replace(string(text))
	path := filepath.Join(dir, confFile)
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		t.Fatal(err)
	}
	opts.NoLog, opts.NoSigs = true, true
	ns, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	s := &site{url: ns.ClientURL(), ca: ca.File, seeds: map[string]string{}, warns: &warnings{}}
	for _, e := range examples {
		seed, err := exampleKey(t, e.name).Seed()
		if err != nil {
			t.Fatal(err)
		}
		short := strings.Fields(e.name)[0]
		s.seeds[short] = filepath.Join(dir, short+".nk")
		if err := os.WriteFile(s.seeds[short], seed, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// open opens the bus as the example user name (its first word), as a gpupool
// process does.
func (s *site) open(t *testing.T, name string, manageStreams bool) *bus.Conn {
	t.Helper()
	cfg := bus.DefaultConfig()
	seed, ok := s.seeds[name]
	if !ok {
		t.Fatalf("no example user %s", name)
	}
	cfg.URL, cfg.NKeyFile, cfg.TLSCA, cfg.Streams.Manage = s.url, seed, s.ca, manageStreams
	c, err := bus.Open(t.Context(), cfg, name, slog.New(s.warns))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	t.Cleanup(c.Close)
	return c
}

// warnings records what the bus clients log at warning level and above: a
// permissions violation is logged there.
type warnings struct {
	mu    sync.Mutex
	lines []string
}

func (w *warnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	line := r.Message
	r.Attrs(func(a slog.Attr) bool { line += " " + a.String(); return true })
	w.mu.Lock()
	w.lines = append(w.lines, line)
	w.mu.Unlock()
	return nil
}
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnings) WithGroup(string) slog.Handler      { return w }

func (w *warnings) violations() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, l := range w.lines {
		if strings.Contains(l, "ermissions violation") {
			out = append(out, l)
		}
	}
	return out
}

// TestExampleRunsGpupool drives gpupool's components through nats-server.conf
// with the example credentials over TLS: a node's collector publishes its samples
// and jobs, ingest stores them (and dead-letters a bad batch), the analyzer
// publishes a finding, the scheduler publishes job events and a notice and kills a
// process through the node's agent, and the alerter posts the finding and the
// notice. No component meets a permissions violation.
func TestExampleRunsGpupool(t *testing.T) {
	s := startExample(t)
	ctx := t.Context()
	sink := &countingSink{rows: map[string]int{}}
	startIngest(t, s.open(t, "ingest", true), sink)

	pid, exited := child(t)
	node := s.open(t, "gpu-01", false)
	col, err := collector.New(nodeConfig(), holder{pid}, node.JS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = col.Close() })
	if err := col.Collect(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	publishJobs(t, node, "collector", "c1")
	if _, err := node.JS.Publish(ctx, bus.SamplesSubject("c1", "gpu-01"), []byte("not a batch")); err != nil {
		t.Fatal(err)
	}
	priv, pub := keyPair(t)
	startAgent(t, node, col, pub)

	analyzer := s.open(t, "analyzer", false)
	data, err := schemas.EncodeFindingMessage(finding())
	if err != nil {
		t.Fatal(err)
	}
	if err := (findings.JetStreamPublisher{JS: analyzer.JS}).Publish(ctx, findings.Subject(schemas.KindIdle), "f-1", data); err != nil {
		t.Fatal(err)
	}

	sched := s.open(t, "scheduler", false)
	publishJobs(t, sched, "scheduler", "c2", bus.AsScheduler())
	if err := audit.NewBusNotifier(sched.JS).Notify(ctx, notice()); err != nil {
		t.Fatal(err)
	}
	acfg := executor.DefaultAgentConfig()
	acfg.PrivateKeyFile, acfg.Cluster = priv, "c1"
	exec, err := agentexec.New(acfg, sched.NC)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Kill(ctx, executor.Target{Job: "proc/gpu-01/train", Node: "gpu-01", PID: pid}, 0)
	if err != nil || !out.Done {
		t.Fatalf("the scheduler's kill through the agent: %+v, %v", out, err)
	}
	<-exited

	posts := startAlerter(t, s.open(t, "alerter", false))
	waitFor(t, "two alerts posted (the finding and the notice)", func() bool { return posts.count() >= 2 })
	waitFor(t, "ingest to store samples and the job events of both clusters", func() bool {
		return sink.count("gpu_samples") >= 1 && sink.count("job_events") >= 2
	})
	operator := s.open(t, "operator", false)
	waitFor(t, "the bad batch in the dead letters", func() bool {
		st, err := operator.JS.Stream(ctx, bus.StreamDeadLetter)
		return err == nil && st.CachedInfo().State.Msgs == 1
	})
	if v := s.warns.violations(); len(v) > 0 {
		t.Fatalf("components met permissions violations:\n%s", strings.Join(v, "\n"))
	}
}

// TestExampleDenies: with the example credentials, a node cannot publish another
// node's samples, findings or the scheduler's job events, nor receive another
// node's commands.
func TestExampleDenies(t *testing.T) {
	s := startExample(t)
	s.open(t, "ingest", true) // creates the streams
	for _, tc := range []struct {
		name, user string
		op         func(nc *natsgo.Conn) error
		subject    string
	}{
		{"another node's samples", "gpu-01", func(nc *natsgo.Conn) error { return nc.Publish(bus.SamplesSubject("c1", "gpu-02"), []byte("x")) },
			bus.SamplesSubject("c1", "gpu-02")},
		{"findings", "gpu-01", func(nc *natsgo.Conn) error { return nc.Publish(bus.FindingsSubject("idle"), []byte("x")) },
			bus.FindingsSubject("idle")},
		{"another node's commands", "gpu-02", func(nc *natsgo.Conn) error {
			_, err := nc.SubscribeSync(bus.ActionsSubject("c1", "gpu-01"))
			return err
		}, bus.ActionsSubject("c1", "gpu-01")},
		{"the scheduler's job events", "gpu-01", func(nc *natsgo.Conn) error {
			return nc.Publish(bus.SchedulerJobsSubject("c1"), []byte("x"))
		}, bus.SchedulerJobsSubject("c1")},
		{"the scheduler's job events, with a collector credential for every node", "loadgen", func(nc *natsgo.Conn) error {
			return nc.Publish(bus.SchedulerJobsSubject("c1"), []byte("x"))
		}, bus.SchedulerJobsSubject("c1")},
		{"samples, as the analyzer", "analyzer", func(nc *natsgo.Conn) error { return nc.Publish(bus.SamplesSubject("c1", "gpu-01"), []byte("x")) },
			bus.SamplesSubject("c1", "gpu-01")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc, err := bus.Connect(bus.ClientConfig{URL: s.url, NKeyFile: s.seeds[tc.user], TLSCA: s.ca}, tc.user, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			if err := tc.op(nc); err != nil {
				t.Fatal(err)
			}
			if err := nc.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := nc.LastError(); !errors.Is(err, natsgo.ErrPermissionViolation) || !strings.Contains(err.Error(), `"`+tc.subject+`"`) {
				t.Fatalf("last error %v, want a permissions violation for %s", err, tc.subject)
			}
		})
	}
}

func nodeConfig() collector.Config {
	cfg := collector.DefaultConfig()
	cfg.Cluster, cfg.Node = "c1", "gpu-01"
	return cfg
}

// holder is a source whose one GPU is held by a process of job
// proc/gpu-01/train.
type holder struct{ pid uint32 }

func (h holder) Sample(_ context.Context, at time.Time, b *schemas.SampleBatch) error {
	g := schemas.NewGPUSample()
	g.TimeMs, g.GPUUUID = at.UnixMilli(), "GPU-1"
	b.GPUs = append(b.GPUs, g)
	b.Processes = append(b.Processes, schemas.ProcessSample{TimeMs: at.UnixMilli(), GPUUUID: "GPU-1", PID: h.pid, Job: "proc/gpu-01/train"})
	return nil
}

// publishJobs publishes a start event as producer; the scheduler's (with
// bus.AsScheduler) is of source scheduler, as ingest accepts on its subject only.
func publishJobs(t *testing.T, c *bus.Conn, producer, cluster string, opts ...bus.PublisherOption) {
	t.Helper()
	p, err := bus.NewJobPublisher(bus.JetStreamSender{JS: c.JS}, bus.ProducerName(producer), append(opts, bus.WithTimeout(10*time.Second))...)
	if err != nil {
		t.Fatal(err)
	}
	ev := schemas.JobEvent{TimeMs: time.Now().UnixMilli(), Job: "proc/" + cluster + "/1", Event: schemas.EventStart, Cluster: cluster, GPUs: 1}
	if len(opts) > 0 {
		ev.Job, ev.Source = "sched/"+cluster+"/1", schemas.SourceScheduler
	}
	if err := p.Publish(t.Context(), []schemas.JobEvent{ev}); err != nil {
		t.Fatalf("%s publishes job events for %s: %v", producer, cluster, err)
	}
}

// countingSink counts the rows ingest inserts, per table.
type countingSink struct {
	mu   sync.Mutex
	rows map[string]int
}

func (s *countingSink) Insert(_ context.Context, table string, b *store.Block, _ string) error {
	s.mu.Lock()
	s.rows[table] += b.Rows()
	s.mu.Unlock()
	return nil
}

func (s *countingSink) count(table string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rows[table]
}

func startIngest(t *testing.T, c *bus.Conn, sink ingest.Sink) {
	t.Helper()
	cfg := ingest.DefaultConfig()
	cfg.BatchAge = 50 * time.Millisecond
	in, err := ingest.New(cfg, c.JS, sink)
	if err != nil {
		t.Fatal(err)
	}
	run(t, in.Run)
}

func startAgent(t *testing.T, c *bus.Conn, view agent.ProcessView, pubFile string) {
	t.Helper()
	cfg := agent.DefaultConfig()
	cfg.Cluster, cfg.Node, cfg.PublicKeyFile = "c1", "gpu-01", pubFile
	a, err := agent.New(cfg, c.NC, view)
	if err != nil {
		t.Fatal(err)
	}
	run(t, a.Run)
	<-a.Listening()
}

// posts counts what the alerter posts to a webhook.
type posts struct {
	mu sync.Mutex
	n  int
}

func (p *posts) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

func startAlerter(t *testing.T, c *bus.Conn) *posts {
	t.Helper()
	p := &posts{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		p.mu.Lock()
		p.n++
		p.mu.Unlock()
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	cfg := alerts.DefaultConfig()
	cfg.WebhookURL, cfg.ChannelInterval = srv.URL+"/hooks/test", 10*time.Millisecond
	a, err := alerts.New(cfg, c.JS)
	if err != nil {
		t.Fatal(err)
	}
	run(t, a.Run)
	return p
}

// run runs a component until the test ends.
func run(t *testing.T, f func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = f(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

func finding() *schemas.FindingMessage {
	now := time.Now().UTC()
	return &schemas.FindingMessage{Event: schemas.EventOpened, Finding: schemas.Finding{
		ID: "f-1", Kind: schemas.KindIdle, State: schemas.StateOpen, Episode: 1, Severity: schemas.SeverityWarning,
		Node: "gpu-01", Job: "proc/gpu-01/train", Team: "nlp", Card: "H100-80GB", FirstSeen: now, UpdatedAt: now,
	}}
}

func notice() schemas.Notice {
	f := finding().Finding
	f.ID = "f-2"
	return schemas.Notice{Time: time.Now().UTC(), Team: "nlp", Job: f.Job, Policy: "idle-reclaim", Finding: f,
		NextAction: "reclaim", NextAt: time.Now().Add(15 * time.Minute)}
}

// keyPair writes the scheduler's ed25519 key pair as openssl does.
func keyPair(t *testing.T) (privFile, pubFile string) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pk, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	pp, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	privFile, pubFile = filepath.Join(dir, "scheduler.key"), filepath.Join(dir, "scheduler.pub")
	if err := os.WriteFile(privFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pp}), 0o644); err != nil {
		t.Fatal(err)
	}
	return privFile, pubFile
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

// waitFor checks cond every 20 ms until it holds, and fails the test after 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
