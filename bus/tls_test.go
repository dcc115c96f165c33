package bus_test

import (
	"crypto/x509"
	"regexp"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/bus/bustest"
)

// TestTLS runs the embedded server with TLS and users: a collector that trusts
// the CA connects over tls:// and publishes its samples; one that does not trust
// it, or (with verify) presents no client certificate, is refused.
func TestTLS(t *testing.T) {
	ca := bustest.NewCA(t, "gpupool test CA")
	other := bustest.NewCA(t, "another CA")
	serverCert, serverKey := ca.Issue(t, "nats", x509.ExtKeyUsageServerAuth)
	clientCert, clientKey := ca.Issue(t, "gpu-01", x509.ExtKeyUsageClientAuth)
	u, seed := bustest.NewUser(t, "gpu-01", []bus.Role{bus.RoleCollector}, ownCluster, ownNode)
	for _, verify := range []bool{false, true} {
		cfg := bus.DefaultEmbeddedConfig()
		cfg.DataDir, cfg.Users = t.TempDir(), []bus.User{u}
		cfg.TLS = bus.ServerTLS{CertFile: serverCert, KeyFile: serverKey, CAFile: ca.File, Verify: verify}
		b := bustest.StartConfig(t, cfg)
		url := strings.Replace(b.URL, "nats://", "tls://", 1)
		for _, tc := range []struct {
			name   string
			client bus.ClientConfig
			want   string // a regexp of the error; "": connects
		}{
			{"trusts the CA", bus.ClientConfig{TLSCA: ca.File, TLSCert: clientCert, TLSKey: clientKey}, ""},
			{"trusts another CA", bus.ClientConfig{TLSCA: other.File, TLSCert: clientCert, TLSKey: clientKey}, "certificate signed by unknown authority"},
			{"no client certificate", bus.ClientConfig{TLSCA: ca.File}, map[bool]string{false: "", true: "certificate required|closed by remote after TLS handshake"}[verify]},
		} {
			t.Run(map[bool]string{false: "server TLS", true: "mutual TLS"}[verify]+"/"+tc.name, func(t *testing.T) {
				tc.client.URL, tc.client.NKeyFile = url, seed
				nc, err := bus.Connect(tc.client, "collector", nil, nats.RetryOnFailedConnect(false), nats.MaxReconnects(0))
				if tc.want != "" {
					if err == nil {
						nc.Close()
						t.Fatal("connected")
					}
					if !regexp.MustCompile(tc.want).MatchString(err.Error()) {
						t.Fatalf("err = %v, want a TLS failure (%s)", err, tc.want)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				defer nc.Close()
				if !nc.TLSRequired() {
					t.Error("connected without TLS")
				}
				js, err := jetstream.New(nc)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := js.Publish(t.Context(), bus.SamplesSubject(ownCluster, ownNode), []byte("x")); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}
