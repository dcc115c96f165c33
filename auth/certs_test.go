package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// testCA issues certificates for tests, written as PEM files under dir.
type testCA struct {
	t    *testing.T
	dir  string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	file string
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	ca := &testCA{t: t, dir: t.TempDir()}
	ca.key = newKey(t)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &ca.key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	ca.cert, _ = x509.ParseCertificate(der)
	ca.file = ca.write(name+"-ca.pem", "CERTIFICATE", der)
	return ca
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func (ca *testCA) write(name, kind string, der []byte) string {
	p := filepath.Join(ca.dir, name)
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		ca.t.Fatal(err)
	}
	return p
}

// issue returns the certificate and key files of subject, for a server
// (127.0.0.1) or a client.
func (ca *testCA) issue(subject pkix.Name, server bool) (certFile, keyFile string) {
	ca.t.Helper()
	key := newKey(ca.t)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: subject,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if server {
		tmpl.ExtKeyUsage, tmpl.IPAddresses = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		ca.t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		ca.t.Fatal(err)
	}
	name := strings.ReplaceAll(subject.CommonName, ":", "_")
	return ca.write(name+".pem", "CERTIFICATE", der), ca.write(name+"-key.pem", "EC PRIVATE KEY", kder)
}

// TestClientCertificates serves the guard over TLS with a client CA: a client
// certificate's common name maps to roles (tls.client_roles) and so do its OUs
// (tls.ou_roles); without a certificate or token, 401; a bearer
// token still works; a certificate of another CA fails the handshake.
func TestClientCertificates(t *testing.T) {
	ca, rogue := newTestCA(t, "gpupool"), newTestCA(t, "rogue")
	srvCert, srvKey := ca.issue(pkix.Name{CommonName: "scheduler"}, true)
	g := tokenGuard(t, func(c *Config) {
		c.TLS = TLSConfig{CertFile: srvCert, KeyFile: srvKey, ClientCAFile: ca.file, OURoles: OURoles{"team:nlp": {"team:nlp"}},
			ClientRoles: map[string][]string{"node-17": {"agent"}}}
	}, nil, map[string]Role{"ops": RoleOperator})
	tc, err := ServerTLS(TLSConfig{CertFile: srvCert, KeyFile: srvKey, ClientCAFile: ca.file})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(g.Handler(echo))
	srv.TLS = tc
	srv.StartTLS()
	t.Cleanup(srv.Close)
	client := func(certFile, keyFile, caFile string) *http.Client {
		ctc, err := ClientTLS(caFile, certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		return &http.Client{Transport: &http.Transport{TLSClientConfig: ctc}, Timeout: 10 * time.Second}
	}
	nodeCert, nodeKey := ca.issue(pkix.Name{CommonName: "node-17"}, false)
	aliceCert, aliceKey := ca.issue(pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"team:nlp", "Research"}}, false)
	rogueCert, rogueKey := rogue.issue(pkix.Name{CommonName: "node-17"}, false)
	// Present the rogue certificate whatever CAs the server asks for.
	pushy := client("", "", ca.file)
	rogueKeyPair, err := tls.LoadX509KeyPair(rogueCert, rogueKey)
	if err != nil {
		t.Fatal(err)
	}
	pushy.Transport.(*http.Transport).TLSClientConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		return &rogueKeyPair, nil
	}
	for _, tc := range []struct {
		name       string
		c          *http.Client
		token      string
		status     int
		body       string
		handshakes bool
	}{
		{"mapped common name", client(nodeCert, nodeKey, ca.file), "", 200, "cert:node-17 ", true},
		{"roles from OUs", client(aliceCert, aliceKey, ca.file), "", 200, "cert:alice ", true},
		{"no certificate", client("", "", ca.file), "", 401, "no credential", true},
		{"token over TLS", client("", "", ca.file), "tok-ops", 200, "token:ops ", true},
		{"another CA's certificate", pushy, "", 0, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(t.Context(), "GET", srv.URL+"/v1/queues", nil)
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			resp, err := tc.c.Do(req)
			if !tc.handshakes {
				if err == nil {
					resp.Body.Close()
					t.Fatalf("a certificate of another CA was accepted: %d", resp.StatusCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || !strings.Contains(string(body), tc.body) {
				t.Fatalf("%d %s, want %d %q", resp.StatusCode, body, tc.status, tc.body)
			}
		})
	}
	// The identities' roles, read straight from the authenticator.
	cc, err := NewClientCerts(TLSConfig{OURoles: OURoles{"team:nlp": {"team:nlp"}}, ClientRoles: map[string][]string{"node-17": {"agent"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		certFile, want string
	}{{nodeCert, "cert:node-17 (agent)"}, {aliceCert, "cert:alice (team:nlp)"}} {
		data, _ := os.ReadFile(tc.certFile)
		block, _ := pem.Decode(data)
		leaf, _ := x509.ParseCertificate(block.Bytes)
		r := httptest.NewRequest("GET", "https://scheduler/", nil)
		r.TLS.VerifiedChains = [][]*x509.Certificate{{leaf}}
		id, err := cc.Authenticate(r)
		if err != nil || Describe(id) != tc.want {
			t.Errorf("%s: %s, %v; want %s", tc.certFile, Describe(id), err, tc.want)
		}
	}
}

// TestAttackCertOUGrantsUnmappedRole: a certificate the trusted CA signed with
// OUs that are role names (admin, operator, another team) gets none of those
// roles: an OU grants only what tls.ou_roles maps it to, and a mapped common
// name keeps only its mapped roles. Over the real TLS listener, an admin route
// refuses them both; the mapped OU still works.
func TestAttackCertOUGrantsUnmappedRole(t *testing.T) {
	ca := newTestCA(t, "gpupool")
	srvCert, srvKey := ca.issue(pkix.Name{CommonName: "scheduler"}, true)
	cfg := TLSConfig{CertFile: srvCert, KeyFile: srvKey, ClientCAFile: ca.file,
		ClientRoles: map[string][]string{"node-17": {"agent"}}, OURoles: OURoles{"ml-nlp": {"team:nlp"}}}
	g := tokenGuard(t, func(c *Config) { c.TLS = cfg }, nil, nil)
	tc, err := ServerTLS(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/admin", g.Allow(AnyRole(RoleAdmin, RoleOperator, RoleFinance), echo))
	mux.Handle("/team", g.Allow(AnyRole(RoleAnyTeam), echo))
	srv := httptest.NewUnstartedServer(g.Handler(mux))
	srv.TLS = tc
	srv.StartTLS()
	t.Cleanup(srv.Close)
	grabby := []string{"admin", "operator", "finance", "team:vision"}
	for _, c := range []struct {
		name         string
		subject      pkix.Name
		path         string
		status       int
		roles, allow string
	}{
		{"unmapped name with role OUs", pkix.Name{CommonName: "mallory", OrganizationalUnit: grabby}, "/admin", 403, "cert:mallory (no role)", ""},
		{"mapped name with role OUs", pkix.Name{CommonName: "node-17", OrganizationalUnit: grabby}, "/admin", 403, "cert:node-17 (agent)", ""},
		{"another team's OU", pkix.Name{CommonName: "eve", OrganizationalUnit: []string{"team:vision", "ml-nlp"}}, "/team", 200, "cert:eve (team:nlp)", "cert:eve "},
		{"mapped OU", pkix.Name{CommonName: "carol", OrganizationalUnit: []string{"ml-nlp"}}, "/team", 200, "cert:carol (team:nlp)", "cert:carol "},
	} {
		t.Run(c.name, func(t *testing.T) {
			certFile, keyFile := ca.issue(c.subject, false)
			ctc, err := ClientTLS(ca.file, certFile, keyFile)
			if err != nil {
				t.Fatal(err)
			}
			hc := &http.Client{Transport: &http.Transport{TLSClientConfig: ctc}, Timeout: 10 * time.Second}
			req, _ := http.NewRequestWithContext(t.Context(), "GET", srv.URL+c.path, nil)
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.status || (c.allow != "" && string(body) != c.allow) {
				t.Fatalf("%s: %d %s, want %d", c.path, resp.StatusCode, body, c.status)
			}
			if c.status == 403 && !strings.Contains(string(body), c.roles) {
				t.Errorf("refusal %s does not name %s", body, c.roles)
			}
		})
	}
}

// TestOURolesYAML: tls.ou_roles reads as a mapping of OU to roles; false, the
// old way of saying none, still means none; true, which let any OU that names
// a role grant it, is refused at load with what to write instead.
func TestOURolesYAML(t *testing.T) {
	for _, tc := range []struct {
		src, want, err string
	}{
		{"ou_roles: {ml-nlp: [\"team:nlp\"], platform: [operator]}", "map[ml-nlp:[team:nlp] platform:[operator]]", ""},
		{"ou_roles: {}", "map[]", ""},
		{"ou_roles: false", "map[]", ""},
		{"client_ca_file: ca.pem", "map[]", ""},
		{"ou_roles: true", "", "line 1: auth.tls.ou_roles: true is no longer accepted: it let a certificate's OU grant any role, admin included; map each OU to the roles it grants instead"},
		{"ou_roles: [admin]", "", "auth.tls.ou_roles: want a mapping of OU to roles"},
	} {
		t.Run(tc.src, func(t *testing.T) {
			var c TLSConfig
			err := yaml.Unmarshal([]byte(tc.src), &c)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("%v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(map[string][]string(c.OURoles)); got != tc.want {
				t.Fatalf("%s, want %s", got, tc.want)
			}
		})
	}
}
