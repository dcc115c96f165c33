package bus_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/bus/bustest"
)

var update = flag.Bool("update", false, "rewrite the role × subject table in docs/bus-security.md")

// The collector's and the agent's node; the other node and cluster are gpu-02 and c2.
const (
	ownCluster = "c1"
	ownNode    = "gpu-01"
)

// cellEnv is what an operation of the table runs with.
type cellEnv struct {
	nc    *nats.Conn
	js    jetstream.JetStream
	admin *bustest.Bus
	id    string // unique per cell, for consumer and stream names
}

// operation is a row of the table: something a credential may or may not do.
type operation struct {
	name  string
	allow []bus.Role
	run   func(ctx context.Context, e cellEnv) error
}

func publish(subject string) func(context.Context, cellEnv) error {
	return func(ctx context.Context, e cellEnv) error {
		_, err := e.js.Publish(ctx, subject, []byte("x"))
		return err
	}
}

// commands subscribes to a node's command subject, has the admin send a command
// and answers it: the admin must get the answer.
func commands(node string) func(context.Context, cellEnv) error {
	return func(ctx context.Context, e cellEnv) error {
		subject := bus.ActionsSubject(ownCluster, node)
		sub, err := e.nc.Subscribe(subject, func(m *nats.Msg) { _ = m.Respond([]byte("done")) })
		if err != nil {
			return err
		}
		defer sub.Unsubscribe()
		if err := e.nc.FlushWithContext(ctx); err != nil {
			return err
		}
		if err := waitViolation(e.nc); err != nil {
			return err
		}
		reply, err := e.admin.Conn.RequestWithContext(ctx, subject, []byte("cmd"))
		if err != nil {
			return fmt.Errorf("the admin's command got no answer: %w", err)
		}
		if string(reply.Data) != "done" {
			return fmt.Errorf("answer %q", reply.Data)
		}
		return nil
	}
}

// corePublish publishes a core NATS message (no stream stores it): allowed
// when no violation comes back.
func corePublish(subject string) func(context.Context, cellEnv) error {
	return func(ctx context.Context, e cellEnv) error {
		if err := e.nc.Publish(subject, []byte("x")); err != nil {
			return err
		}
		if err := e.nc.FlushWithContext(ctx); err != nil {
			return err
		}
		return waitViolation(e.nc)
	}
}

// subscribe only subscribes: allowed when no violation comes back.
func subscribe(subject string) func(context.Context, cellEnv) error {
	return func(ctx context.Context, e cellEnv) error {
		sub, err := e.nc.SubscribeSync(subject)
		if err != nil {
			return err
		}
		defer sub.Unsubscribe()
		if err := e.nc.FlushWithContext(ctx); err != nil {
			return err
		}
		return waitViolation(e.nc)
	}
}

// consume creates a durable pull consumer on stream, fetches a message and acks it.
func consume(stream string) func(context.Context, cellEnv) error {
	return func(ctx context.Context, e cellEnv) error {
		c, err := e.js.CreateOrUpdateConsumer(ctx, stream, jetstream.ConsumerConfig{Durable: "cell-" + e.id, AckPolicy: jetstream.AckExplicitPolicy})
		if err != nil {
			return err
		}
		batch, err := c.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return err
		}
		for m := range batch.Messages() {
			return m.DoubleAck(ctx)
		}
		if err := batch.Error(); err != nil {
			return err
		}
		return errors.New("fetched nothing")
	}
}

// bucket creates a key-value bucket (or finds it), puts, gets, lists and deletes.
func bucket(name string) func(context.Context, cellEnv) error {
	return func(ctx context.Context, e cellEnv) error {
		kv, err := e.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: name, History: 1})
		if err != nil {
			return err
		}
		key := "k-" + e.id
		if _, err := kv.Put(ctx, key, []byte("v")); err != nil {
			return err
		}
		if _, err := kv.Get(ctx, key); err != nil {
			return err
		}
		lister, err := kv.ListKeys(ctx)
		if err != nil {
			return err
		}
		for range lister.Keys() {
		}
		return kv.Delete(ctx, key)
	}
}

// operations are the table's rows: every subject gpupool uses, with the roles
// whose credentials may use it.
var operations = []operation{
	{"publish its node's samples: `gpupool.samples.c1.gpu-01`", []bus.Role{bus.RoleCollector, bus.RoleAdmin},
		publish(bus.SamplesSubject(ownCluster, ownNode))},
	{"publish another node's samples: `gpupool.samples.c1.gpu-02`", []bus.Role{bus.RoleAdmin},
		publish(bus.SamplesSubject(ownCluster, "gpu-02"))},
	{"publish its cluster's job events: `gpupool.jobs.c1`", []bus.Role{bus.RoleCollector, bus.RoleScheduler, bus.RoleAdmin},
		publish(bus.JobsSubject(ownCluster))},
	{"publish another cluster's job events: `gpupool.jobs.c2`", []bus.Role{bus.RoleScheduler, bus.RoleAdmin},
		publish(bus.JobsSubject("c2"))},
	{"publish the scheduler's job events: `gpupool.jobs.c1.scheduler`", []bus.Role{bus.RoleScheduler, bus.RoleAdmin},
		publish(bus.SchedulerJobsSubject(ownCluster))},
	{"publish findings: `gpupool.findings.<kind>`", []bus.Role{bus.RoleAnalyzer, bus.RoleAdmin},
		publish(bus.FindingsSubject("idle"))},
	{"publish notices: `gpupool.alerts.<team>`", []bus.Role{bus.RoleScheduler, bus.RoleAdmin},
		publish(bus.AlertsSubject("vision"))},
	{"publish dead letters: `gpupool.deadletter.<kind>`", []bus.Role{bus.RoleIngest, bus.RoleAdmin},
		publish(bus.DeadLetterSubject("samples"))},
	{"tell a node's collector of its dead-lettered batches: `gpupool.rejected.c1.gpu-01`", []bus.Role{bus.RoleIngest, bus.RoleAdmin},
		corePublish(bus.RejectedSubject(ownCluster, ownNode))},
	{"hear of its node's dead-lettered batches: subscribe `gpupool.rejected.c1.gpu-01`", []bus.Role{bus.RoleCollector, bus.RoleAdmin},
		subscribe(bus.RejectedSubject(ownCluster, ownNode))},
	{"hear of another node's: subscribe `gpupool.rejected.c1.gpu-02`", []bus.Role{bus.RoleAdmin},
		subscribe(bus.RejectedSubject(ownCluster, "gpu-02"))},
	{"send a node's agent a command: `gpupool.actions.c1.gpu-03`", []bus.Role{bus.RoleScheduler, bus.RoleAdmin},
		func(ctx context.Context, e cellEnv) error {
			subject := bus.ActionsSubject(ownCluster, "gpu-03")
			sub, err := e.admin.Conn.Subscribe(subject, func(m *nats.Msg) { _ = m.Respond([]byte("done")) })
			if err != nil {
				return err
			}
			defer sub.Unsubscribe()
			if err := e.admin.Conn.Flush(); err != nil {
				return err
			}
			_, err = e.nc.RequestWithContext(ctx, subject, []byte("cmd"))
			return err
		}},
	{"receive and answer its node's commands: `gpupool.actions.c1.gpu-01`", []bus.Role{bus.RoleAgent, bus.RoleAdmin},
		commands(ownNode)},
	{"receive another node's commands: `gpupool.actions.c1.gpu-02`", []bus.Role{bus.RoleAdmin},
		commands("gpu-02")},
	{"read samples off the wire: subscribe `gpupool.samples.>`", []bus.Role{bus.RoleAdmin},
		subscribe(bus.SamplesPrefix + ".>")},
	{"read another credential's replies: subscribe `_INBOX.>`", []bus.Role{bus.RoleAdmin},
		subscribe("_INBOX.>")},
	{"consume samples: `GPUPOOL_SAMPLES`", []bus.Role{bus.RoleIngest, bus.RoleAdmin}, consume(bus.StreamSamples)},
	{"consume job events: `GPUPOOL_JOBS`", []bus.Role{bus.RoleIngest, bus.RoleAdmin}, consume(bus.StreamJobs)},
	{"consume findings and notices: `GPUPOOL_FINDINGS`", []bus.Role{bus.RoleAlerter, bus.RoleAdmin}, consume(bus.StreamFindings)},
	{"consume dead letters: `GPUPOOL_DEADLETTER`", []bus.Role{bus.RoleAdmin}, consume(bus.StreamDeadLetter)},
	{"read a stored sample batch by sequence", []bus.Role{bus.RoleIngest, bus.RoleAdmin},
		func(ctx context.Context, e cellEnv) error {
			s, err := e.js.Stream(ctx, bus.StreamSamples)
			if err != nil {
				return err
			}
			_, err = s.GetMsg(ctx, 1)
			return err
		}},
	{"check that the streams exist", bus.AllRoles(),
		func(ctx context.Context, e cellEnv) error {
			_, err := e.js.Stream(ctx, bus.StreamFindings)
			return err
		}},
	{"create the streams and update their limits", []bus.Role{bus.RoleStreams, bus.RoleAdmin},
		func(ctx context.Context, e cellEnv) error {
			return bus.EnsureStreams(ctx, e.js, bus.DefaultStreamsConfig())
		}},
	{"delete a stream", []bus.Role{bus.RoleAdmin},
		func(ctx context.Context, e cellEnv) error {
			name := "SCRATCH_" + e.id
			if _, err := e.admin.JS.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{"scratch." + e.id}}); err != nil {
				return err
			}
			return e.js.DeleteStream(ctx, name)
		}},
	{"use ingest's intents bucket: `" + bus.DefaultIntentBucket + "`", []bus.Role{bus.RoleIngest, bus.RoleAdmin},
		bucket(bus.DefaultIntentBucket)},
	{"use the alerter's bucket: `" + bus.DefaultStateBucket + "`", []bus.Role{bus.RoleAlerter, bus.RoleAdmin},
		bucket(bus.DefaultStateBucket)},
}

// waitViolation returns the permissions violation the connection has seen, if
// any: the server sends it before the answer to the flush that preceded.
func waitViolation(nc *nats.Conn) error {
	if err := nc.LastError(); errors.Is(err, nats.ErrPermissionViolation) {
		return err
	}
	return nil
}

// try runs op as a user over TCP and reports whether it was allowed: it is
// denied when the server answers with a permissions violation; any other failure
// fails the test.
func try(t *testing.T, b *bustest.Bus, seed, id string, op operation) bool {
	t.Helper()
	violations := make(chan error, 16)
	nc, err := bus.Connect(bus.ClientConfig{URL: b.URL, NKeyFile: seed}, "cell-"+id, nil,
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if errors.Is(err, nats.ErrPermissionViolation) {
				violations <- err
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- op.run(ctx, cellEnv{nc: nc, js: js, admin: b, id: id}) }()
	select {
	case err := <-violations:
		cancel()
		<-done
		t.Logf("denied: %v", err)
		return false
	case err := <-done:
		if v := waitViolation(nc); v != nil {
			t.Logf("denied: %v", v)
			return false
		}
		if err != nil {
			t.Fatalf("failed without a permissions violation: %v", err)
		}
		return true
	}
}

// TestRoleSubjectTable runs every operation with a credential of every role on an
// embedded server with those users, and checks the outcome against the roles the
// operation allows and against the table in docs/bus-security.md.
func TestRoleSubjectTable(t *testing.T) {
	roles := bus.AllRoles()
	users := make([]bus.User, len(roles))
	seeds := map[bus.Role]string{}
	for i, r := range roles {
		users[i], seeds[r] = bustest.NewUser(t, string(r), []bus.Role{r}, ownCluster, ownNode)
	}
	b := bustest.StartUsers(t, users...)
	ctx := t.Context()
	for _, s := range []string{bus.SamplesSubject(ownCluster, ownNode), bus.JobsSubject(ownCluster), bus.FindingsSubject("idle"), bus.DeadLetterSubject("samples")} {
		if _, err := b.JS.Publish(ctx, s, []byte("seed")); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for _, op := range operations {
		for _, r := range roles {
			n++
			id := fmt.Sprint(n)
			t.Run(op.name+"/"+string(r), func(t *testing.T) {
				want := slices.Contains(op.allow, r)
				if got := try(t, b, seeds[r], id, op); got != want {
					t.Fatalf("allowed = %t, want %t", got, want)
				}
			})
		}
	}
	checkDocTable(t, renderTable(roles))
}

// renderTable is the role × operation table of docs/bus-security.md.
func renderTable(roles []bus.Role) string {
	var b strings.Builder
	b.WriteString("| operation |")
	for _, r := range roles {
		fmt.Fprintf(&b, " %s |", r)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(roles)) + "\n")
	for _, op := range operations {
		fmt.Fprintf(&b, "| %s |", op.name)
		for _, r := range roles {
			if slices.Contains(op.allow, r) {
				b.WriteString(" yes |")
			} else {
				b.WriteString(" – |")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

const tableBegin, tableEnd = "<!-- role table: written by go test ./bus -run TestRoleSubjectTable -update -->\n", "<!-- end of role table -->"

// checkDocTable checks the doc's table is the one tested (or writes it with
// -update).
func checkDocTable(t *testing.T, table string) {
	t.Helper()
	path := filepath.Join("..", "docs", "bus-security.md")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	i, j := strings.Index(doc, tableBegin), strings.Index(doc, tableEnd)
	if i < 0 || j < i {
		t.Fatalf("%s: no role table between %q and %q", path, tableBegin, tableEnd)
	}
	if *update {
		doc = doc[:i+len(tableBegin)] + table + doc[j:]
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got := doc[i+len(tableBegin) : j]; got != table {
		t.Errorf("%s: the role table differs from the tested one (go test ./bus -run TestRoleSubjectTable -update):\n%s", path, table)
	}
}

// TestServerConfigParsesBack renders a server configuration and reads it back
// with nats-server's own parser: every user has the permissions Permissions
// gives it, TLS and JetStream are set.
func TestServerConfigParsesBack(t *testing.T) {
	collector, _ := bustest.NewUser(t, "gpu-01", []bus.Role{bus.RoleCollector, bus.RoleAgent}, "c1", "gpu-01")
	ingest, _ := bustest.NewUser(t, "ingest", []bus.Role{bus.RoleIngest, bus.RoleStreams}, "", "")
	cfg := bus.ServerConfig{
		Comment: "test", Name: "gpupool-test", Listen: "127.0.0.1:-1", StoreDir: t.TempDir(), MaxStoreBytes: 1 << 30,
		TLS:   bus.ServerTLS{CertFile: "server.pem", KeyFile: "server-key.pem", CAFile: "ca.pem"},
		Users: []bus.User{collector, ingest},
	}
	text, err := cfg.Render()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "nats-server.conf")
	if err := os.WriteFile(path, text, 0o600); err != nil {
		t.Fatal(err)
	}
	opts := &server.Options{}
	// The TLS files do not exist: parse the rest and check the TLS settings were read.
	err = opts.ProcessConfigFile(path)
	if err == nil || !strings.Contains(err.Error(), "server.pem") {
		t.Fatalf("ProcessConfigFile = %v, want only the missing certificate to fail", err)
	}
	if !opts.JetStream || opts.StoreDir != cfg.StoreDir || opts.JetStreamMaxStore != cfg.MaxStoreBytes || opts.ServerName != cfg.Name {
		t.Errorf("jetstream %t, store %q, max %d, name %q", opts.JetStream, opts.StoreDir, opts.JetStreamMaxStore, opts.ServerName)
	}
	if len(opts.Nkeys) != 2 {
		t.Fatalf("%d nkey users, want 2", len(opts.Nkeys))
	}
	for i, u := range cfg.Users {
		want, err := u.Permissions()
		if err != nil {
			t.Fatal(err)
		}
		got := opts.Nkeys[i]
		if got.Nkey != u.NKey || got.Account == nil || got.Account.Name != bus.Account {
			t.Errorf("user %d: nkey %s in account %v", i, got.Nkey, got.Account)
		}
		if !reflect.DeepEqual(got.Permissions, want) {
			t.Errorf("user %s: parsed permissions\n%+v\nwant\n%+v", u.Name, got.Permissions, want)
		}
	}
}

// TestUserValidate checks a user without a usable key, role or scope is refused,
// naming the field.
func TestUserValidate(t *testing.T) {
	good, _ := bustest.NewUser(t, "n", []bus.Role{bus.RoleCollector}, "c1", "n1")
	for _, tc := range []struct {
		name string
		edit func(*bus.User)
		want string
	}{
		{"valid", func(*bus.User) {}, ""},
		{"any node", func(u *bus.User) { u.Node = bus.AnyName }, ""},
		{"seed instead of the public key", func(u *bus.User) { u.NKey = "SUAM" + u.NKey[4:] }, "nkey:"},
		{"no roles", func(u *bus.User) { u.Roles = nil }, "roles: empty"},
		{"unknown role", func(u *bus.User) { u.Roles = []bus.Role{"root"} }, `roles: "root"`},
		{"collector without a node", func(u *bus.User) { u.Node = "" }, "cluster and node:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := good
			tc.edit(&u)
			err := u.Validate()
			if (tc.want == "") != (err == nil) || (err != nil && !strings.HasPrefix(err.Error(), tc.want)) {
				t.Fatalf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
	dup := bus.ServerConfig{Name: "n", Listen: "l", StoreDir: "d", Users: []bus.User{good, good}}
	if _, err := dup.Render(); err == nil || !strings.Contains(err.Error(), "nkey already given") {
		t.Fatalf("two users with one key: %v", err)
	}
}

// TestStreamsNotManaged: a credential without the streams role opens the bus with
// streams.manage false once the streams exist, and is told what to do before.
func TestStreamsNotManaged(t *testing.T) {
	u, seed := bustest.NewUser(t, "analyzer", []bus.Role{bus.RoleAnalyzer}, "", "")
	cfg := bus.DefaultEmbeddedConfig()
	cfg.DataDir, cfg.Users = t.TempDir(), []bus.User{u}
	srv, err := bus.StartEmbedded(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	c := bus.DefaultConfig()
	c.URL, c.NKeyFile, c.Streams.Manage = srv.ClientURL(), seed, false
	if _, err := bus.Open(t.Context(), c, "analyzer", nil); err == nil || !strings.Contains(err.Error(), "streams role") {
		t.Fatalf("Open before the streams exist = %v, want an error naming the streams role", err)
	}
	admin, err := srv.Connect("admin")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	js, err := jetstream.New(admin)
	if err != nil {
		t.Fatal(err)
	}
	if err := bus.EnsureStreams(t.Context(), js, bus.DefaultStreamsConfig()); err != nil {
		t.Fatal(err)
	}
	conn, err := bus.Open(t.Context(), c, "analyzer", nil)
	if err != nil {
		t.Fatalf("Open once the streams exist: %v", err)
	}
	conn.Close()
	// Managing them takes the streams role: the violation is named.
	c.Streams.Manage = true
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	if _, err := bus.Open(ctx, c, "analyzer", nil); err == nil || !strings.Contains(err.Error(), "permissions violation") {
		t.Fatalf("Open managing the streams without the role = %v, want a permissions violation", err)
	}
}

// TestEmbeddedRefusesStrangers: with users, the embedded server refuses a client
// without a credential and one with a key it does not list.
func TestEmbeddedRefusesStrangers(t *testing.T) {
	u, _ := bustest.NewUser(t, "known", []bus.Role{bus.RoleAnalyzer}, "", "")
	_, stranger := bustest.NewUser(t, "stranger", []bus.Role{bus.RoleAnalyzer}, "", "")
	b := bustest.StartUsers(t, u)
	for name, cc := range map[string]bus.ClientConfig{
		"no credential": {URL: b.URL},
		"unlisted nkey": {URL: b.URL, NKeyFile: stranger},
	} {
		t.Run(name, func(t *testing.T) {
			nc, err := nats.Connect(cc.URL, append(nkeyOpt(t, cc.NKeyFile), nats.MaxReconnects(0))...)
			if err == nil {
				nc.Close()
				t.Fatal("connected")
			}
			if !errors.Is(err, nats.ErrAuthorization) && !strings.Contains(strings.ToLower(err.Error()), "authorization") {
				t.Fatalf("err = %v, want an authorization error", err)
			}
		})
	}
}

func nkeyOpt(t *testing.T, file string) []nats.Option {
	t.Helper()
	if file == "" {
		return nil
	}
	o, err := nats.NkeyOptionFromSeed(file)
	if err != nil {
		t.Fatal(err)
	}
	return []nats.Option{o}
}

// TestEmbeddedWarnsWithoutUsers: listening beyond loopback without users is
// logged as a warning; with users, or on loopback, it is not.
func TestEmbeddedWarnsWithoutUsers(t *testing.T) {
	u, _ := bustest.NewUser(t, "gpu-01", []bus.Role{bus.RoleCollector}, "c1", "gpu-01")
	for _, tc := range []struct {
		name  string
		host  string
		users []bus.User
		warn  bool
	}{
		{"any address, no users", "0.0.0.0", nil, true},
		{"any address, users", "0.0.0.0", []bus.User{u}, false},
		{"loopback, no users", "127.0.0.1", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logged strings.Builder
			cfg := bus.DefaultEmbeddedConfig()
			cfg.DataDir, cfg.Host, cfg.Users = t.TempDir(), tc.host, tc.users
			srv, err := bus.StartEmbedded(cfg, slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelWarn})))
			if err != nil {
				t.Fatal(err)
			}
			srv.Shutdown()
			if got := strings.Contains(logged.String(), "without users"); got != tc.warn {
				t.Fatalf("warned %t, want %t; log:\n%s", got, tc.warn, logged.String())
			}
		})
	}
}
