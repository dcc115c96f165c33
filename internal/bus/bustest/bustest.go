// Package bustest starts a real embedded NATS server with JetStream for a test, on a
// random port and a temporary directory, with gpupool's streams created.
package bustest

import (
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/gpupool/gpupool/internal/bus"
)

// Bus is a running embedded server with one client connection.
type Bus struct {
	Server *bus.Server
	Conn   *nats.Conn
	JS     jetstream.JetStream
	Dir    string
}

// Start starts a server (stopped when the test ends) and creates the streams.
func Start(t testing.TB) *Bus {
	t.Helper()
	return StartIn(t, t.TempDir())
}

// StartIn starts a server on dir, so a test can restart it on the same data.
func StartIn(t testing.TB, dir string) *Bus {
	t.Helper()
	cfg := bus.DefaultEmbeddedConfig()
	cfg.DataDir = dir
	cfg.Port = -1
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
	b := &Bus{Server: srv, Conn: nc, JS: js, Dir: dir}
	t.Cleanup(b.Stop)
	return b
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
