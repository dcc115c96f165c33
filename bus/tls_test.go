package bus_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/bus/bustest"
)

// pki is a CA made for a test, with the files of what it signed.
type pki struct {
	dir    string
	cert   *x509.Certificate
	key    *ecdsa.PrivateKey
	CAFile string
}

func newPKI(t *testing.T, name string) *pki {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	p := &pki{dir: t.TempDir(), cert: cert, key: key}
	p.CAFile = p.write(t, "ca.pem", "CERTIFICATE", der)
	return p
}

func (p *pki) write(t *testing.T, name, kind string, der []byte) string {
	t.Helper()
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// issue signs a certificate for 127.0.0.1 (a server's, or a client's) and
// returns its certificate and key files.
func (p *pki) issue(t *testing.T, name string, usage x509.ExtKeyUsage) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.cert, &key.PublicKey, p.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return p.write(t, name+".pem", "CERTIFICATE", der), p.write(t, name+"-key.pem", "PRIVATE KEY", kder)
}

// TestTLS runs the embedded server with TLS and users: a collector that trusts
// the CA connects over tls:// and publishes its samples; one that does not trust
// it, or (with verify) presents no client certificate, is refused.
func TestTLS(t *testing.T) {
	ca := newPKI(t, "gpupool test CA")
	other := newPKI(t, "another CA")
	serverCert, serverKey := ca.issue(t, "nats", x509.ExtKeyUsageServerAuth)
	clientCert, clientKey := ca.issue(t, "gpu-01", x509.ExtKeyUsageClientAuth)
	u, seed := bustest.NewUser(t, "gpu-01", []bus.Role{bus.RoleCollector}, ownCluster, ownNode)
	for _, verify := range []bool{false, true} {
		cfg := bus.DefaultEmbeddedConfig()
		cfg.DataDir, cfg.Users = t.TempDir(), []bus.User{u}
		cfg.TLS = bus.ServerTLS{CertFile: serverCert, KeyFile: serverKey, CAFile: ca.CAFile, Verify: verify}
		b := bustest.StartConfig(t, cfg)
		url := strings.Replace(b.URL, "nats://", "tls://", 1)
		for _, tc := range []struct {
			name   string
			client bus.ClientConfig
			want   string // "": connects
		}{
			{"trusts the CA", bus.ClientConfig{TLSCA: ca.CAFile, TLSCert: clientCert, TLSKey: clientKey}, ""},
			{"trusts another CA", bus.ClientConfig{TLSCA: other.CAFile, TLSCert: clientCert, TLSKey: clientKey}, "certificate signed by unknown authority"},
			{"no client certificate", bus.ClientConfig{TLSCA: ca.CAFile}, map[bool]string{false: "", true: "certificate required"}[verify]},
		} {
			t.Run(map[bool]string{false: "server TLS", true: "mutual TLS"}[verify]+"/"+tc.name, func(t *testing.T) {
				tc.client.URL, tc.client.NKeyFile = url, seed
				nc, err := bus.Connect(tc.client, "collector", nil, nats.RetryOnFailedConnect(false), nats.MaxReconnects(0))
				if tc.want != "" {
					if err == nil {
						nc.Close()
						t.Fatal("connected")
					}
					if !strings.Contains(err.Error(), tc.want) {
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
