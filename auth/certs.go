package auth

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"slices"
)

// ClientCerts authenticates TLS client certificates the listener verified
// against tls.client_ca_file: the subject's common name is the identity, its
// roles those tls.client_roles gives that name and those tls.ou_roles gives
// its organisational units. An OU grants nothing by its own name: the CA may
// sign what a requester asks for, so an OU "admin" is only a string.
type ClientCerts struct {
	byCN map[string][]Role
	byOU map[string][]Role
}

var _ Authenticator = (*ClientCerts)(nil)

// NewClientCerts returns an authenticator for cfg's certificate mapping.
func NewClientCerts(cfg TLSConfig) (*ClientCerts, error) {
	c := &ClientCerts{byCN: map[string][]Role{}, byOU: map[string][]Role{}}
	for cn, rs := range cfg.ClientRoles {
		roles, err := ParseRoles(rs)
		if err != nil {
			return nil, fmt.Errorf("auth: tls.client_roles.%s: %w", cn, err)
		}
		c.byCN[cn] = roles
	}
	for ou, rs := range cfg.OURoles {
		roles, err := ParseRoles(rs)
		if err != nil {
			return nil, fmt.Errorf("auth: tls.ou_roles.%s: %w", ou, err)
		}
		c.byOU[ou] = roles
	}
	return c, nil
}

// Authenticate reads the request's verified client certificate.
func (c *ClientCerts) Authenticate(r *http.Request) (Identity, error) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return Identity{}, ErrNoCredential
	}
	leaf := r.TLS.VerifiedChains[0][0]
	cn := leaf.Subject.CommonName
	if cn == "" {
		return Identity{}, fmt.Errorf("%w: client certificate without a subject common name", ErrInvalidCredential)
	}
	roles := slices.Clone(c.byCN[cn])
	for _, ou := range leaf.Subject.OrganizationalUnit {
		for _, r := range c.byOU[ou] {
			if !slices.Contains(roles, r) {
				roles = append(roles, r)
			}
		}
	}
	return Identity{Name: cn, Method: "cert", Roles: roles}, nil
}

// ServerTLS is the listener's TLS configuration for cfg: nil without a
// certificate; with a client CA, client certificates signed by it are verified
// when given (a request may still bring a bearer token instead).
func ServerTLS(cfg TLSConfig) (*tls.Config, error) {
	if !cfg.Enabled() {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("auth: tls.cert_file, key_file: %w", err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if cfg.ClientCAFile != "" {
		pool, err := certPool(cfg.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("auth: tls.client_ca_file: %w", err)
		}
		tc.ClientCAs, tc.ClientAuth = pool, tls.VerifyClientCertIfGiven
	}
	return tc, nil
}

// ClientTLS is a client's TLS configuration: trusting caFile ("": the system's
// roots) and presenting the certificate in certFile and keyFile (both "": none).
func ClientTLS(caFile, certFile, keyFile string) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pool, err := certPool(caFile)
		if err != nil {
			return nil, fmt.Errorf("auth: CA file: %w", err)
		}
		tc.RootCAs = pool
	}
	if (certFile == "") != (keyFile == "") {
		return nil, fmt.Errorf("auth: a client certificate needs both its certificate and its key file")
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("auth: client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}
