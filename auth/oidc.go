package auth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
)

// discoveryRetry is how long a failed discovery of the provider is not retried.
const discoveryRetry = 10 * time.Second

// OIDC authenticates ID tokens (JWTs) of an OpenID Connect provider: signed by
// one of the provider's keys, issued by Issuer for ClientID, not expired. The
// username claim names the identity and the groups claim's groups map to roles.
// The provider is discovered on first use and again after a failure (at most
// every 10 s). It is safe for concurrent use.
type OIDC struct {
	cfg    OIDCConfig
	groups map[string][]Role
	o      options

	mu       sync.Mutex
	verifier *oidc.IDTokenVerifier
	tried    time.Time
	err      error
}

var _ Authenticator = (*OIDC)(nil)

// NewOIDC returns an authenticator for cfg (cfg.Issuer set).
func NewOIDC(cfg OIDCConfig, opts ...Option) (*OIDC, error) {
	a := &OIDC{cfg: cfg, groups: map[string][]Role{}, o: newOptions(opts)}
	for g, rs := range cfg.Groups {
		roles, err := ParseRoles(rs)
		if err != nil {
			return nil, fmt.Errorf("auth: oidc.groups.%s: %w", g, err)
		}
		a.groups[g] = roles
	}
	if a.o.hc == nil {
		hc, err := httpClient(cfg.CAFile)
		if err != nil {
			return nil, err
		}
		a.o.hc = hc
	}
	return a, nil
}

// httpClient trusts caFile ("": the system's roots) and times out in 10 s.
func httpClient(caFile string) (*http.Client, error) {
	hc := &http.Client{Timeout: 10 * time.Second}
	if caFile == "" {
		return hc, nil
	}
	pool, err := certPool(caFile)
	if err != nil {
		return nil, fmt.Errorf("auth: oidc.ca_file: %w", err)
	}
	hc.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	return hc, nil
}

// certPool reads PEM certificates.
func certPool(path string) (*x509.CertPool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return pool, nil
}

// discover fetches the provider's discovery document if that has not been done
// yet.
func (a *OIDC) discover(ctx context.Context) (*oidc.IDTokenVerifier, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.verifier != nil {
		return a.verifier, nil
	}
	now := a.o.now()
	if a.err != nil && now.Sub(a.tried) < discoveryRetry {
		return nil, a.err
	}
	a.tried = now
	p, err := oidc.NewProvider(oidc.ClientContext(context.WithoutCancel(ctx), a.o.hc), a.cfg.Issuer)
	if err != nil {
		a.err = fmt.Errorf("%w: OIDC provider %s: %v", ErrUnavailable, a.cfg.Issuer, err)
		a.o.log.Warn("OIDC discovery failed", "issuer", a.cfg.Issuer, "err", err)
		return nil, a.err
	}
	a.verifier, a.err = p.Verifier(&oidc.Config{ClientID: a.cfg.ClientID, Now: a.o.now}), nil
	return a.verifier, nil
}

// Authenticate verifies the request's bearer token as an ID token.
func (a *OIDC) Authenticate(r *http.Request) (Identity, error) {
	raw, err := bearerToken(r)
	if err != nil {
		return Identity{}, err
	}
	v, err := a.discover(r.Context())
	if err != nil {
		return Identity{}, err
	}
	tok, err := v.Verify(oidc.ClientContext(r.Context(), a.o.hc), raw)
	if err != nil {
		return Identity{}, fmt.Errorf("%w: ID token: %v", ErrInvalidCredential, err)
	}
	var claims map[string]any
	if err := tok.Claims(&claims); err != nil {
		return Identity{}, fmt.Errorf("%w: ID token claims: %v", ErrInvalidCredential, err)
	}
	name, _ := claims[a.cfg.UsernameClaim].(string)
	if name == "" {
		return Identity{}, fmt.Errorf("%w: ID token has no %q claim to name the user", ErrInvalidCredential, a.cfg.UsernameClaim)
	}
	return Identity{Name: name, Method: "oidc", Roles: a.roles(claims[a.cfg.GroupsClaim])}, nil
}

// roles maps the groups claim (a list of strings, or one string) to roles.
func (a *OIDC) roles(claim any) []Role {
	var groups []string
	switch g := claim.(type) {
	case string:
		groups = []string{g}
	case []any:
		for _, x := range g {
			if s, ok := x.(string); ok {
				groups = append(groups, s)
			}
		}
	}
	var out []Role
	for _, g := range groups {
		for _, r := range a.groups[g] {
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	return out
}
