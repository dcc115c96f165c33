package bus_test

import (
	"strings"
	"testing"

	"github.com/gpupool/gpupool/bus"
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
