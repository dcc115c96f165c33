package auth

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gpupool/gpupool/schemas"
)

// Modes (Config.Mode).
const (
	// ModeToken requires a credential on every request: a bearer token (static
	// or OIDC) or a client certificate.
	ModeToken = "token"
	// ModeNone lets every caller in as admin; only on a loopback address.
	ModeNone = "none"
)

// DefaultMaxBodyBytes bounds a request body (a findings push of a big fleet fits).
const DefaultMaxBodyBytes = 8 << 20

// Config is the auth: section of the configuration file: how callers of the HTTP
// APIs prove who they are, and the limits per identity.
type Config struct {
	// Mode is token (default: every request needs a credential) or none (every
	// caller is admin; refused on a non-loopback address).
	Mode string `yaml:"mode"`
	// TokensFile holds the static bearer tokens, hashed: one a line,
	// "<name> <role>[,<role>…] sha256:<hex>" (see ParseTokens). It is re-read when
	// it changes. Default <data_dir>/auth/tokens.
	TokensFile string `yaml:"tokens_file"`
	// AdminTokenFile is where the first admin token is written (0600) when
	// GenerateAdminToken is set and the file does not exist yet. Default
	// <data_dir>/auth/admin.token; the CLI reads it when given no other token.
	AdminTokenFile string `yaml:"admin_token_file"`
	// GenerateAdminToken makes the scheduler write an admin token on its first
	// start (and add its hash to TokensFile as "admin"); delete the file and
	// restart to rotate it.
	GenerateAdminToken bool `yaml:"generate_admin_token"`
	// OIDC accepts ID tokens of an OpenID Connect provider (set Issuer to enable).
	OIDC OIDCConfig `yaml:"oidc"`
	// TLS serves the API over HTTPS, and with ClientCAFile accepts client
	// certificates as credentials.
	TLS TLSConfig `yaml:"tls"`
	// Insecure allows a non-loopback listen address without TLS (tokens then
	// cross the network in clear text: only behind a TLS-terminating proxy).
	Insecure bool `yaml:"insecure"`
	// RateLimit is requests per second per identity (0: unlimited); RateBurst is
	// how many may come at once.
	RateLimit float64 `yaml:"rate_limit"`
	RateBurst int     `yaml:"rate_burst"`
	// MaxBodyBytes bounds a request body.
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
}

// OIDCConfig accepts ID tokens (JWTs) signed by an OpenID Connect provider.
type OIDCConfig struct {
	// Issuer is the provider's issuer URL; its discovery document and keys are
	// fetched from it ("": OIDC off).
	Issuer string `yaml:"issuer"`
	// ClientID is the audience a token must be issued for.
	ClientID string `yaml:"client_id"`
	// UsernameClaim names the identity (default sub; email is common).
	UsernameClaim string `yaml:"username_claim"`
	// GroupsClaim is the claim listing the user's groups (default groups).
	GroupsClaim string `yaml:"groups_claim"`
	// Groups maps a group to roles, e.g. {"gpu-admins": [admin], "ml-nlp":
	// ["team:nlp"]}; a user in no mapped group has no role (every call: 403).
	Groups map[string][]string `yaml:"groups"`
	// CAFile trusts a private CA for the provider's HTTPS ("": the system's).
	CAFile string `yaml:"ca_file"`
}

// TLSConfig is the listener's TLS and what client certificates prove.
type TLSConfig struct {
	// CertFile and KeyFile are the server's certificate and key (PEM); both or
	// neither.
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// ClientCAFile makes client certificates signed by this CA credentials (a
	// request may still use a bearer token instead).
	ClientCAFile string `yaml:"client_ca_file"`
	// ClientRoles maps a certificate's subject common name to roles, e.g.
	// {"node-17": [agent]}.
	ClientRoles map[string][]string `yaml:"client_roles"`
	// OURoles maps a certificate's subject organisational unit to roles, e.g.
	// {"ml-nlp": ["team:nlp"]}: an OU grants only the roles mapped here (none
	// by default), so that whoever gets a certificate signed with an OU of their
	// choosing ("admin") gains nothing the configuration does not give it.
	OURoles OURoles `yaml:"ou_roles"`
}

// OURoles maps an organisational unit to roles (TLSConfig.OURoles).
type OURoles map[string][]string

// UnmarshalYAML reads the mapping. The boolean of earlier versions, which made
// every OU that names a role (admin included) that role, is refused with what
// to write instead; false, which granted nothing, still means no OU mapping.
func (o *OURoles) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!bool" {
		var on bool
		if err := n.Decode(&on); err != nil {
			return err
		}
		if on {
			return fmt.Errorf("line %d: auth.tls.ou_roles: true is no longer accepted: it let a certificate's OU grant any role, admin included; map each OU to the roles it grants instead, e.g. ou_roles: {\"team:nlp\": [\"team:nlp\"]} (or {} for none)", n.Line)
		}
		*o = nil
		return nil
	}
	var m map[string][]string
	if err := n.Decode(&m); err != nil {
		return fmt.Errorf("line %d: auth.tls.ou_roles: want a mapping of OU to roles, e.g. {\"ml-nlp\": [\"team:nlp\"]}: %w", n.Line, err)
	}
	*o = m
	return nil
}

// Enabled reports whether the listener serves TLS.
func (t TLSConfig) Enabled() bool { return t.CertFile != "" }

// DefaultConfig is token mode with a generated admin token, 50 requests per
// second per identity (bursts of 100) and 8 MiB bodies.
func DefaultConfig() Config {
	return Config{
		Mode: ModeToken, GenerateAdminToken: true, RateLimit: 50, RateBurst: 100, MaxBodyBytes: DefaultMaxBodyBytes,
		OIDC: OIDCConfig{UsernameClaim: "sub", GroupsClaim: "groups"},
	}
}

// Resolve fills the paths that follow dataDir.
func (c *Config) Resolve(dataDir string) {
	if c.TokensFile == "" {
		c.TokensFile = filepath.Join(dataDir, "auth", "tokens")
	}
	if c.AdminTokenFile == "" {
		c.AdminTokenFile = filepath.Join(dataDir, "auth", "admin.token")
	}
}

// Validate checks the settings, naming each failing field by its path under auth:.
func (c Config) Validate() error {
	var errs []error
	switch c.Mode {
	case ModeToken, ModeNone:
	default:
		errs = append(errs, schemas.Fieldf("mode", "%q is not token or none", c.Mode))
	}
	if c.RateLimit < 0 || (c.RateLimit > 0 && c.RateBurst < 1) {
		errs = append(errs, schemas.Fieldf("rate_limit", "%g per second with burst %d: want a rate ≥ 0 and, with a rate, a burst ≥ 1", c.RateLimit, c.RateBurst))
	}
	if c.MaxBodyBytes < 1 {
		errs = append(errs, schemas.Fieldf("max_body_bytes", "%d must be at least 1", c.MaxBodyBytes))
	}
	if c.OIDC.Issuer != "" {
		if u, err := url.Parse(c.OIDC.Issuer); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			errs = append(errs, schemas.Fieldf("oidc.issuer", "%q is not an http(s) URL", c.OIDC.Issuer))
		}
		if c.OIDC.ClientID == "" {
			errs = append(errs, schemas.Field("oidc.client_id", errors.New("empty (the audience tokens must be issued for)")))
		}
		if c.OIDC.UsernameClaim == "" || c.OIDC.GroupsClaim == "" {
			errs = append(errs, schemas.Field("oidc", errors.New("username_claim and groups_claim must not be empty")))
		}
	}
	for g, roles := range c.OIDC.Groups {
		if _, err := ParseRoles(roles); err != nil {
			errs = append(errs, fmt.Errorf("oidc.groups.%s: %w", g, err))
		}
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		errs = append(errs, schemas.Field("tls", errors.New("cert_file and key_file go together")))
	}
	if c.TLS.ClientCAFile != "" && !c.TLS.Enabled() {
		errs = append(errs, schemas.Field("tls.client_ca_file", errors.New("client certificates need the listener's TLS (cert_file, key_file)")))
	}
	for cn, roles := range c.TLS.ClientRoles {
		if _, err := ParseRoles(roles); err != nil {
			errs = append(errs, fmt.Errorf("tls.client_roles.%s: %w", cn, err))
		}
	}
	for ou, roles := range c.TLS.OURoles {
		if _, err := ParseRoles(roles); err != nil {
			errs = append(errs, fmt.Errorf("tls.ou_roles.%s: %w", ou, err))
		}
	}
	return errors.Join(errs...)
}

// CheckListen refuses what is unsafe on addr (host:port) and returns warnings to
// log about what is allowed but weak: mode none only on a loopback address;
// without TLS, only a loopback address unless Insecure.
func (c Config) CheckListen(addr string) (warnings []string, err error) {
	loop := IsLoopback(addr)
	if c.Mode == ModeNone {
		if !loop {
			return nil, fmt.Errorf("auth.mode none on %s: without authentication the API may only listen on a loopback address (127.0.0.1, ::1, localhost); use mode token", addr)
		}
		warnings = append(warnings, "auth.mode none: every caller of the API is admin (loopback only)")
	}
	if !c.TLS.Enabled() && !loop {
		if !c.Insecure {
			return nil, fmt.Errorf("listen %s without TLS: tokens would cross the network in clear text; set auth.tls.cert_file and key_file, or auth.insecure: true behind a TLS-terminating proxy", addr)
		}
		warnings = append(warnings, "auth.insecure: the API listens on a non-loopback address without TLS")
	}
	return warnings, nil
}

// IsLoopback reports whether addr (host:port) listens on loopback only: a
// loopback IP or the name localhost. An empty host is every interface.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
