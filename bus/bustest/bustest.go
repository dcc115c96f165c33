// Package bustest starts a real embedded NATS server with JetStream for a test, on a
// random port and a temporary directory, with gpupool's streams created (with or
// without users: NewUser makes one, with its seed file), and reads back what the
// samples and jobs streams hold (Bus.Stored).
package bustest

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/gpupool/gpupool/bus"
)

// Bus is a running embedded server with one client connection.
type Bus struct {
	Server *bus.Server
	Conn   *nats.Conn
	JS     jetstream.JetStream
	Dir    string
	// URL is where clients outside the process connect.
	URL string
}

// Start starts a server (stopped when the test ends) and creates the streams.
func Start(t testing.TB) *Bus {
	t.Helper()
	return StartIn(t, t.TempDir())
}

// StartIn starts a server on dir, so a test can restart it on the same data.
func StartIn(t testing.TB, dir string) *Bus {
	t.Helper()
	return StartOn(t, dir, -1)
}

// FreePort returns a TCP port that was free a moment ago, for a server that must
// come back on the same port after a restart.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// StartOn starts a server on dir listening on port (-1: any free port).
func StartOn(t testing.TB, dir string, port int) *Bus {
	t.Helper()
	cfg := bus.DefaultEmbeddedConfig()
	cfg.DataDir = dir
	cfg.Port = port
	return StartConfig(t, cfg)
}

// StartUsers starts a server on any free port that accepts only users over the
// network; Conn is the process's own in-process connection, an admin.
func StartUsers(t testing.TB, users ...bus.User) *Bus {
	t.Helper()
	cfg := bus.DefaultEmbeddedConfig()
	cfg.DataDir = t.TempDir()
	cfg.Users = users
	return StartConfig(t, cfg)
}

// StartConfig starts a server configured by cfg.
func StartConfig(t testing.TB, cfg bus.EmbeddedConfig) *Bus {
	t.Helper()
	dir := cfg.DataDir
	srv, err := bus.StartEmbedded(cfg, nil)
	if err != nil {
		t.Fatalf("bustest: %v", err)
	}
	nc, err := srv.Connect("test")
	if err != nil {
		srv.Shutdown()
		t.Fatalf("bustest: %v", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("bustest: %v", err)
	}
	if err := bus.EnsureStreams(t.Context(), js, bus.DefaultStreamsConfig()); err != nil {
		t.Fatalf("bustest: %v", err)
	}
	b := &Bus{Server: srv, Conn: nc, JS: js, Dir: dir, URL: srv.ClientURL()}
	t.Cleanup(b.Stop)
	return b
}

// NewUser makes a user nkey with roles, scoped to cluster and node, and writes its
// seed to a file in a temporary directory: the server lists the bus.User, the
// client names the file in bus.ClientConfig.NKeyFile.
func NewUser(t testing.TB, name string, roles []bus.Role, cluster, node string) (bus.User, string) {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatalf("bustest: %v", err)
	}
	pub, err := kp.PublicKey()
	if err != nil {
		t.Fatalf("bustest: %v", err)
	}
	seed, err := kp.Seed()
	if err != nil {
		t.Fatalf("bustest: %v", err)
	}
	file := filepath.Join(t.TempDir(), name+".nk")
	if err := os.WriteFile(file, append(seed, '\n'), 0o600); err != nil {
		t.Fatalf("bustest: %v", err)
	}
	return bus.User{Name: name, NKey: pub, Roles: roles, Cluster: cluster, Node: node}, file
}

// Stop closes the connection and shuts the server down; calling it twice is fine.
func (b *Bus) Stop() {
	if b.Conn != nil {
		b.Conn.Close()
		b.Conn = nil
	}
	if b.Server != nil {
		b.Server.Shutdown()
		b.Server = nil
	}
}
