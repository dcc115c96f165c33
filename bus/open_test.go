package bus_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/bus/bustest"
)

// TestOpenEmbeddedThenExternal opens the embedded server on a free port, then a
// second connection to it as an external NATS: both have the streams, say where
// they are, are ready, and a message published through one is drained to the
// server on Close.
func TestOpenEmbeddedThenExternal(t *testing.T) {
	cfg := bus.DefaultConfig()
	cfg.Embedded.DataDir = t.TempDir()
	emb, err := bus.Open(t.Context(), cfg, "test-embedded", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Close()
	if !strings.HasPrefix(emb.Where(), "embedded, nats://127.0.0.1:") || emb.Ready() != nil {
		t.Fatalf("embedded: where %q, ready %v", emb.Where(), emb.Ready())
	}
	ext := cfg
	ext.URL = emb.Server.ClientURL()
	c, err := bus.Open(t.Context(), ext, "test-external", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Server != nil || c.Where() != ext.URL || c.Ready() != nil {
		t.Fatalf("external: server %v, where %q, ready %v", c.Server, c.Where(), c.Ready())
	}
	if err := c.NC.Publish(bus.SamplesSubject("c", "n"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if c.Ready() == nil {
		t.Error("ready after Close")
	}
	s, err := emb.JS.Stream(t.Context(), bus.StreamSamples)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1 {
		t.Fatalf("the stream holds %d messages after the external connection closed, want 1", info.State.Msgs)
	}
}

// TestConfigValidateNamesTheField checks the section in use is validated and
// named: the embedded server's without a URL, the client's with one.
func TestConfigValidateNamesTheField(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*bus.Config)
		want string
	}{
		{"embedded without a data dir", func(c *bus.Config) { c.Embedded.DataDir = "" }, "embedded.data_dir:"},
		{"client with half a TLS pair", func(c *bus.Config) { c.URL, c.TLSCert = "nats://n1:4222", "cert.pem" }, "tls_cert and tls_key:"},
		{"streams", func(c *bus.Config) { c.Streams.Replicas = 9 }, "streams.replicas:"},
		{"client ignores the embedded section", func(c *bus.Config) { c.URL, c.Embedded.DataDir = "nats://n1:4222", "" }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := bus.DefaultConfig()
			tc.edit(&c)
			err := c.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want it to start with %q", err, tc.want)
			}
		})
	}
}

// TestOpenUnreachable: an external URL nothing listens on is an error naming NATS,
// the URL and what to check, which errors.Is ErrUnreachable (it used to wait 30 s
// and say "streams: create or update GPUPOOL_SAMPLES: context deadline exceeded").
// With Offline, Open returns a connection that keeps trying, and makes the
// streams once a server comes up on that URL.
func TestOpenUnreachable(t *testing.T) {
	port := bustest.FreePort(t) // closed: nothing listens there
	cfg := bus.DefaultConfig()
	cfg.URL = fmt.Sprintf("nats://127.0.0.1:%d", port)
	cfg.ConnectTimeout = 300 * time.Millisecond
	c, err := bus.Open(t.Context(), cfg, "test-unreachable", nil)
	if err == nil {
		c.Close()
		t.Fatal("Open of a closed port succeeded")
	}
	if !errors.Is(err, bus.ErrUnreachable) {
		t.Errorf("error %q is not ErrUnreachable", err)
	}
	for _, want := range []string{"NATS unreachable", cfg.URL, "is nats-server running", "bus.url", "--nats-url"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "deadline exceeded") {
		t.Errorf("error %q still reads as a timeout", err)
	}

	off, err := bus.Open(t.Context(), cfg, "test-offline", nil, bus.Offline(true))
	if err != nil {
		t.Fatalf("Offline: %v", err)
	}
	defer off.Close()
	if off.Ready() == nil {
		t.Fatal("ready with no server")
	}
	// A bare server (no streams) comes up on that port.
	ecfg := bus.DefaultEmbeddedConfig()
	ecfg.DataDir, ecfg.Port = t.TempDir(), port
	srv, err := bus.StartEmbedded(ecfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	nc, err := srv.Connect("test-check")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := js.Stream(t.Context(), bus.StreamSamples); err == nil && off.Ready() == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the offline connection never made the streams: %v (ready: %v)", err, off.Ready())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
